// Advanced indexing past the leading dims (an undefined Tensor is a full slice)
// against values PyTorch 1.13 gives: each expected value was printed by the torch
// expression in the comment above it. Also per-sample indices under vmap, and
// bad input.
#include <gtest/gtest.h>

#include <vector>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;

namespace {

using strata::testing::allclose;
using strata::testing::error_message;
using strata::testing::expect_contains;

const st::Tensor kAll;  // a full slice, `:`

st::Tensor f64(std::initializer_list<double> values, st::IntArrayRef shape) {
  return st::tensor(values, shape);
}
st::Tensor i64(std::vector<int64_t> values, st::IntArrayRef shape) {
  return st::tensor(values, shape);
}

TEST(IndexSlicesTorchValues, AdjacentIndicesStayInPlace) {
  // x = torch.arange(12.).reshape(3, 4) * 0.5 - 1
  const st::Tensor x = st::arange(12, st::kFloat64).view({3, 4}) * 0.5 - 1.0;
  // x[:, torch.tensor([[2, 0], [1, 3]])]: shape [3, 2, 2]
  EXPECT_TRUE(allclose(x.index({kAll, i64({2, 0, 1, 3}, {2, 2})}),
                       f64({0, -1, -0.5, 0.5, 2, 1, 1.5, 2.5, 4, 3, 3.5, 4.5}, {3, 2, 2})));
  // x[:, torch.tensor(2)]
  EXPECT_TRUE(
      allclose(x.index({kAll, st::tensor(std::vector<int64_t>{2}, {})}), f64({0, 2, 4}, {3})));
  // x[:, torch.tensor([True, False, True, True])]
  EXPECT_TRUE(allclose(x.index({kAll, st::tensor(std::vector<bool>{true, false, true, true})}),
                       f64({-1, 0, 0.5, 1, 2, 2.5, 3, 4, 4.5}, {3, 3})));
  // z = torch.arange(48.).reshape(2, 3, 2, 4)
  // z[:, :, torch.tensor([1, 0]), torch.tensor([[3], [0]])]: shape [2, 3, 2, 2]
  const st::Tensor z = st::arange(48, st::kFloat64).view({2, 3, 2, 4});
  EXPECT_TRUE(allclose(z.index({kAll, kAll, i64({1, 0}, {2}), i64({3, 0}, {2, 1})}),
                       f64({7,  3,  4,  0,  15, 11, 12, 8,  23, 19, 20, 16,
                            31, 27, 28, 24, 39, 35, 36, 32, 47, 43, 44, 40},
                           {2, 3, 2, 2})));
}

TEST(IndexSlicesTorchValues, SeparatedIndicesGoFirst) {
  // y = torch.arange(24.).reshape(2, 3, 4); y[torch.tensor([1, 0]), :, torch.tensor([3, -1])]
  const st::Tensor y = st::arange(24, st::kFloat64).view({2, 3, 4});
  EXPECT_TRUE(allclose(y.index({i64({1, 0}, {2}), kAll, i64({3, -1}, {2})}),
                       f64({15, 19, 23, 3, 7, 11}, {2, 3})));
  // z[:, torch.tensor([0, 2]), :, torch.tensor([1, 3])]: shape [2, 2, 2]
  const st::Tensor z = st::arange(48, st::kFloat64).view({2, 3, 2, 4});
  EXPECT_TRUE(allclose(z.index({kAll, i64({0, 2}, {2}), kAll, i64({1, 3}, {2})}),
                       f64({1, 5, 25, 29, 19, 23, 43, 47}, {2, 2, 2})));
  // y[torch.tensor([True, False]), :, torch.tensor([2])]: shape [1, 3]
  EXPECT_TRUE(allclose(y.index({st::tensor(std::vector<bool>{true, false}), kAll, i64({2}, {1})}),
                       f64({2, 6, 10}, {1, 3})));
}

TEST(IndexSlicesTorchValues, WritesAndGradient) {
  // torch.ops.aten.index_put(torch.zeros(2, 4), [None, torch.tensor([0, 3, 0])],
  //                          torch.tensor([[1., 2., 3.], [4., 5., 6.]]), True)
  const st::Tensor w = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(
      allclose(st::zeros({2, 4}, st::kFloat64).index_put({kAll, i64({0, 3, 0}, {3})}, w, true),
               f64({4, 0, 0, 2, 10, 0, 0, 5}, {2, 4})));
  // r = torch.zeros(2, 3, 4); r[torch.tensor([1, 0]), :, torch.tensor([3, 1])] = w
  const st::Tensor r = st::zeros({2, 3, 4}, st::kFloat64);
  r.index_put_({i64({1, 0}, {2}), kAll, i64({3, 1}, {2})}, w);
  EXPECT_TRUE(allclose(
      r, f64({0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3}, {2, 3, 4})));
  // xx = y.requires_grad_(); (xx[torch.tensor([1, 0]), :, torch.tensor([3, -1])] * wt).sum()
  // with wt = torch.arange(6.).reshape(2, 3) + 1: xx.grad
  const st::Tensor y = st::arange(24, st::kFloat64).view({2, 3, 4});
  const st::Tensor g = st::grad([&](const st::Tensor& t) {
    return (t.index({i64({1, 0}, {2}), kAll, i64({3, -1}, {2})}) * w).sum();
  })(y);
  EXPECT_TRUE(allclose(
      g, f64({0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3}, {2, 3, 4})));
}

TEST(IndexSlicesUnderVmap, PerSampleIndicesMatchALoop) {
  const st::Tensor xs = st::arange(48, st::kFloat64).view({2, 3, 2, 4});
  const st::Tensor is = i64({1, 0, 3, 3}, {2, 2});
  const auto f = [](const st::Tensor& x, const st::Tensor& i) {
    return x.index({i64({2, 0}, {2}), kAll, i});
  };
  const st::Tensor batched = st::vmap(f)(xs, is);
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_TRUE(allclose(batched.select(0, b), f(xs.select(0, b), is.select(0, b))));
  }
}

TEST(IndexSlicesErrors, NameTheOpAndShapes) {
  const st::Tensor a = st::zeros({3, 4}, st::kFloat64);
  expect_contains(error_message([&] {
                    a.index({kAll, i64({4}, {1})});
                  }),
                  {"[strata::index]", "index 4 is out of range for dim 1 of size 4"});
  expect_contains(error_message([&] {
                    a.index({kAll, kAll, i64({0}, {1})});
                  }),
                  {"[strata::index]", "too many indices", "3 dims", "[3, 4]"});
  const st::Tensor m3 = st::tensor(std::vector<bool>{true, false, true});
  expect_contains(error_message([&] {
                    a.index({kAll, m3});
                  }),
                  {"[strata::index]", "Bool index of shape [3]", "[3, 4]", "dims 1"});
  const st::Tensor b = st::zeros({2, 3, 4}, st::kFloat64);
  expect_contains(error_message([&] {
                    b.index({m3, kAll, i64({0}, {1})});
                  }),
                  {"[strata::index]", "Bool index of shape [3]", "[2, 3, 4]", "dims 0"});
  expect_contains(error_message([&] {
                    b.index({i64({0, 1}, {2}), kAll, i64({0, 1, 2}, {3})});
                  }),
                  {"[strata::index]", "[2] and [3] cannot be broadcast"});
  expect_contains(
      error_message([&] {
        b.index_put({kAll, i64({0, 1}, {2})}, st::zeros({3}, st::kFloat64));
      }),
      {"[strata::index_put]", "[3] cannot be broadcast to the indexed shape [2, 2, 4]"});
}

}  // namespace
