// trace's bad input: each a strata::Error that says what is wrong and where.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::error_message;
using testing::expect_contains;

Tensor f(const Tensor& a, const Tensor& b) { return (a * b).sum(); }

class TraceErrors : public testing::TransformStateRestored {};

TEST_F(TraceErrors, ReplayNamesTheInputThatDiffers) {
  const Tensor x = ones({2, 3}, kFloat64);
  const Graph g = trace(f)(x, x);
  expect_contains(error_message([&] { g(x); }), {"Graph", "2 input", "got 1"});
  expect_contains(error_message([&] { g(x, ones({3, 2}, kFloat64)); }),
                  {"input 1", "%1", "Float64[2, 3]", "Float64[3, 2]"});
  expect_contains(error_message([&] { g(ones({2, 3}, kFloat32), x); }),
                  {"input 0", "%0", "Float64[2, 3]", "Float32[2, 3]"});
}

TEST_F(TraceErrors, ParseErrorsPointAtTheLineAndColumn) {
  const Tensor x = ones({2}, kFloat64);
  const std::string text = trace(f)(x, x).to_string();
  std::string broken = text;
  broken.replace(broken.find("strata::mul.Tensor(%0"), 21, "strata::mul.Tensor(%9");
  expect_contains(error_message([&] { Graph::parse(broken); }),
                  {"Graph::parse", "line 3, column", "%9 is not defined"});
  std::string unknown = text;
  unknown.replace(unknown.find("strata::mul.Tensor"), 18, "strata::mulx.Tensor");
  expect_contains(error_message([&] { Graph::parse(unknown); }),
                  {"line 3, column 19", "unknown operator 'strata::mulx.Tensor'"});
  expect_contains(error_message([&] { Graph::parse("%0 : Float64[2] = input\n%1 : Float64[2 = input\n"); }),
                  {"line 2, column 16", "expected ','"});
  expect_contains(error_message([&] { Graph::parse("%0 : Float64[2] = input\n"); }), {"no return line"});
  expect_contains(error_message([&] { Graph::parse("%0 : Float99[2] = input\nreturn %0\n"); }),
                  {"line 1, column 6", "unknown dtype 'Float99'"});
  expect_contains(error_message([&] {
                    Graph::parse("%7 : Float64[2] = input\n%7 : Float64[2] = input\nreturn %7\n");
                  }),
                  {"line 2", "%7 is defined twice"});
}

TEST_F(TraceErrors, DataAccessInFakeModeNamesTheReader) {
  const Tensor x = ones({2}, kFloat64);
  const auto reads = [](const Tensor& a) { return a * a.sum().item<double>(); };
  expect_contains(error_message([&] { trace(reads, {.mode = TraceMode::Fake})(x); }),
                  {"Tensor::item", "fake tensor", "needs real data"});
}

// A fake tensor's view knows the size of the storage under it (a fake input's is
// its own, a view's its base's), so as_strided checks its bounds as it would on
// real data: a view past the end of the storage is the same error.
TEST_F(TraceErrors, FakeAsStridedChecksTheStorageBounds) {
  const Tensor x = arange(6, kFloat64);
  const auto inside = [](const Tensor& a) { return a.slice(0, 2, 6).as_strided({2, 2}, {1, 2}, 2); };
  const Graph g = trace(inside, {.mode = TraceMode::Fake})(x);
  EXPECT_EQ(g.values()[static_cast<size_t>(g.outputs()[0])].type, value_type_of(inside(x)));
  const auto past = [](const Tensor& a) { return a.slice(0, 2, 6).as_strided({2, 2}, {1, 2}, 3); };
  const std::string eager = error_message([&] { past(x); });
  expect_contains(eager, {"strata::as_strided", "reach element 6", "storage of 6 elements"});
  EXPECT_EQ(error_message([&] { trace(past, {.mode = TraceMode::Fake})(x); }), eager);
}

TEST_F(TraceErrors, ADecompositionMustMatchTheOpsSignature) {
  DecompositionTable table;
  expect_contains(error_message([&] {
                    table.set<Tensor(const Tensor&, const Tensor&)>(
                        "strata::mse_loss", [](const Tensor& a, const Tensor&) { return a; });
                  }),
                  {"strata::mse_loss"});
  expect_contains(error_message([&] {
                    table.set<Tensor(const Tensor&)>("strata::no_such_op", [](const Tensor& a) { return a; });
                  }),
                  {"DecompositionTable", "strata::no_such_op"});
  EXPECT_EQ(table.size(), 0u);
}

TEST_F(TraceErrors, TraceInsideATransformIsRefused) {
  const Tensor x = ones({2}, kFloat64);
  expect_contains(error_message([&] {
                    grad([](const Tensor& a) { return trace([](const Tensor& b) { return b.sum(); })(a), a.sum(); })(x);
                  }),
                  {"trace", "inside a transform", "grad"});
}

}  // namespace
}  // namespace strata
