// Regression tests for what the fuzzers found (tests/fuzz/README.md): the
// differential fuzzer's wrong values and the libFuzzer targets' crashes. Each
// used to crash or give a wrong value; each now gives the right value or raises
// a strata::Error that says what was wrong.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;
using testing::error_message;
using testing::expect_contains;

class FuzzFindings : public testing::TransformStateRestored {};

// The jvp twin of ProbeDefects.GradOfAnInPlaceWriteIntoAViewOfAnUntrackedClone:
// a dual value written through a view of a clone of a captured (tangent-free)
// tensor; the clone's tangent must follow the write.
TEST_F(FuzzFindings, JvpOfAnInPlaceWriteIntoAViewOfAnUntrackedClone) {
  const Tensor y = arange(6, kFloat64).reshape({2, 3});
  auto f = [&](const Tensor& x) {
    Tensor t = y.clone();
    t.reshape({-1}).mul_(x.reshape({-1}));
    return t;
  };
  const Tensor x = ones({2, 3}, kFloat64);
  const Tensor v = arange(6, kFloat64).reshape({2, 3}) + 1.0;
  const auto [out, tangent] = jvp(f, std::make_tuple(x), std::make_tuple(v));
  EXPECT_TRUE(allclose(out, y));
  EXPECT_TRUE(allclose(tangent, y * v)) << tangent;
}

TEST_F(FuzzFindings, JvpOfAnInPlaceWriteIntoAnUntrackedClone) {
  const Tensor y = arange(6, kFloat64).reshape({2, 3});
  auto f = [&](const Tensor& x) {
    Tensor t = y.clone();
    t.mul_(x);
    return t;
  };
  const Tensor x = ones({2, 3}, kFloat64);
  const Tensor v = arange(6, kFloat64).reshape({2, 3}) + 1.0;
  const auto [out, tangent] = jvp(f, std::make_tuple(x), std::make_tuple(v));
  EXPECT_TRUE(allclose(tangent, y * v)) << tangent;
}

// fuzz_graph_parser: a value numbered %333333333333332 made the parser size a
// table by the number (an allocation of terabytes). Numbers are names, any size.
TEST_F(FuzzFindings, GraphTextWithAHugeValueNumberParses) {
  const Graph g = Graph::parse(
      "%0 : Float64[2] = input\n"
      "%333333333333332 : Float64[2] = strata::sin(%0)\n"
      "return %333333333333332\n");
  const Tensor x = tensor({0.5, 1.0}).to(kFloat64);
  EXPECT_TRUE(allclose(g(x).at(0), x.sin()));
  expect_contains(error_message([] { Graph::parse("%0 : Float64[2] = input\nreturn %7\n"); }),
                  {"line 2", "%7 is not defined"});
}

// fuzz_boxed_call: chunk(INT64_MAX) of a dim of size 0 made INT64_MAX empty
// pieces (a hang), and of a non-empty dim overflowed size + chunks - 1.
TEST_F(FuzzFindings, ChunkWithHugeCounts) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  expect_contains(error_message([&] { empty({0, 1, 1}, kFloat64).chunk(huge, 0); }),
                  {"strata::chunk", "has size 0", "empty pieces"});
  const std::vector<Tensor> empty_pieces = empty({0, 1, 1}, kFloat64).chunk(3, 0);
  ASSERT_EQ(empty_pieces.size(), 3u);  // as torch.zeros(0, 1, 1).chunk(3)
  EXPECT_EQ(empty_pieces[2].sizes(), empty({0, 1, 1}).sizes());
  const Tensor x = arange(5, kFloat64);
  const std::vector<Tensor> pieces = x.chunk(huge, 0);
  ASSERT_EQ(pieces.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(pieces[static_cast<size_t>(i)].item<double>(), double(i));
  EXPECT_EQ(x.chunk(2, 0).size(), 2u);
  EXPECT_EQ(x.chunk(2, 0)[0].numel(), 3);
}

// fuzz_boxed_call: full([0, 2, 2^62, 2]) has no elements, but its contiguous
// strides multiplied past int64 (signed overflow).
TEST_F(FuzzFindings, EmptyShapeWhoseStridesOverflow) {
  const int64_t big = int64_t{1} << 62;
  expect_contains(error_message([&] { full({0, 2, big, 2}, 5, kBool); }),
                  {"shape [0, 2, 4611686018427387904, 2]", "strides past 2^63 - 1"});
  EXPECT_EQ(full({0, big}, 5, kBool).strides()[0], big);  // a product that fits is kept
}

// fuzz_boxed_call: slice with a step of 2^62 overflowed computing the size and
// the stride.
TEST_F(FuzzFindings, SliceWithAHugeStep) {
  const Tensor x = arange(6, kFloat64).reshape({3, 2});
  const int64_t big = int64_t{1} << 62;
  const Tensor s = x.slice(0, 1, std::nullopt, big);
  EXPECT_EQ(s.sizes(), x.slice(0, 1, 2).sizes());
  EXPECT_EQ(s.to_vector<double>(), (std::vector<double>{2.0, 3.0}));
  EXPECT_EQ(x.slice(0, 0, std::nullopt, std::numeric_limits<int64_t>::max()).size(0), 1);
  EXPECT_EQ(x.slice(0, 0, std::nullopt, 2).to_vector<double>(), (std::vector<double>{0.0, 1.0, 4.0, 5.0}));
}

// fuzz_boxed_call: Int64 add with alpha 2^62 overflowed (undefined behaviour);
// Int64 arithmetic wraps around as in PyTorch.
TEST_F(FuzzFindings, Int64ArithmeticWraps) {
  const int64_t big = int64_t{1} << 62;
  const Tensor a = tensor(std::vector<int64_t>{1, -1}, {2});
  const Tensor b = tensor(std::vector<int64_t>{-4, 4}, {2});
  // 2^62 * -4 = -2^64 wraps to 0; 2^62 * 4 likewise.
  EXPECT_EQ(a.add(b, big).to_vector<int64_t>(), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(a.sub(b, big).to_vector<int64_t>(), (std::vector<int64_t>{1, -1}));
  const Tensor m = tensor(std::vector<int64_t>{std::numeric_limits<int64_t>::max()}, {1});
  EXPECT_EQ((m + m).to_vector<int64_t>(), (std::vector<int64_t>{-2}));
  EXPECT_EQ((m * m).to_vector<int64_t>(), (std::vector<int64_t>{1}));
  EXPECT_EQ(a.add(b, 2).to_vector<int64_t>(), (std::vector<int64_t>{-7, 7}));
}

// fuzz_boxed_call: linspace into an Int64 result cast NaN to an integer
// (undefined behaviour).
TEST_F(FuzzFindings, LinspaceOfNanIntoIntegers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_contains(error_message([&] { (void)linspace(nan, 1.0, 3, kInt64); }),
                  {"linspace", "finite and in range", "Int64"});
  expect_contains(error_message([&] { (void)linspace(0.0, 1e300, 3, kInt64); }), {"linspace"});
  EXPECT_EQ(linspace(0.0, 4.0, 3, kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_TRUE(std::isnan(linspace(nan, 1.0, 2, kFloat64).to_vector<double>()[0]));
}

// fuzz_boxed_call: reshape multiplied the given sizes without checking, so
// [3, 3, 2^62, -1] overflowed (undefined behaviour) before any check.
TEST_F(FuzzFindings, ReshapeToAShapeTooLargeToCount) {
  const Tensor x = ones({3, 1});
  const int64_t big = int64_t{1} << 62;
  expect_contains(error_message([&] { (void)x.reshape({3, 3, big, -1}); }),
                  {"reshape", "[3, 3, 4611686018427387904, -1]", "more than 2^63 - 1 elements"});
  expect_contains(error_message([&] { (void)x.reshape({big, 4}); }), {"more than 2^63 - 1 elements"});
  EXPECT_EQ(x.reshape({3, -1}).sizes(), x.sizes());
}

// fuzz_boxed_call: an undefined tensor passed (boxed) for a Tensor? argument
// reached batch_norm's kernel as a present weight and was dereferenced.
TEST_F(FuzzFindings, BoxedUndefinedTensorForAnOptionalTensorIsNone) {
  const OperatorHandle op = Dispatcher::singleton().findSchemaOrThrow("strata::batch_norm", "");
  const Tensor x = arange(6, kFloat64).reshape({2, 3});
  Stack stack;
  for (const IValue& v : std::initializer_list<IValue>{x, Tensor(), IValue(), Tensor(), Tensor(), true,
                                                       0.1, 1e-5}) {
    stack.push_back(v);
  }
  ASSERT_EQ(stack.size(), op.schema().arguments().size());
  op.call_boxed(stack);
  ASSERT_EQ(stack.size(), 1u);
  EXPECT_TRUE(allclose(stack[0].to_tensor(), nn::batch_norm(x, std::nullopt, std::nullopt, std::nullopt,
                                                            std::nullopt, true, 0.1, 1e-5)));
}

}  // namespace
}  // namespace strata
