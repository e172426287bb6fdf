// cumsum, sort, topk, pad, index, index_put and masked_select against values
// PyTorch 1.13 gives (torch.sort(stable=True), torch.topk, F.pad, advanced indexing;
// each expected value was printed by torch), their gradients under grad, what vmap
// does with a Bool mask, fake trace mode, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;
namespace nn = strata::nn;

namespace {

using strata::testing::allclose;
using strata::testing::error_message;
using strata::testing::expect_contains;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

st::Tensor f64(std::initializer_list<double> values, st::IntArrayRef shape) {
  return st::tensor(values, shape);
}
st::Tensor i64(std::vector<int64_t> values, st::IntArrayRef shape) {
  return st::tensor(values, shape);
}

TEST(SortTorchValues, StableWithNaNLastAscendingFirstDescending) {
  const st::Tensor x = f64({3, 1, 2, 1, kNaN, 0, -1, 0}, {2, 4});
  auto [up, up_i] = x.sort(1);
  EXPECT_TRUE(allclose(up, f64({1, 1, 2, 3, -1, 0, 0, kNaN}, {2, 4})));
  EXPECT_EQ(up_i.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 2, 0, 2, 1, 3, 0}));
  auto [down, down_i] = x.sort(1, true);
  EXPECT_TRUE(allclose(down, f64({3, 2, 1, 1, kNaN, 0, 0, -1}, {2, 4})));
  EXPECT_EQ(down_i.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1, 3, 0, 1, 3, 2}));
}

TEST(TopkTorchValues, ValuesIndicesAndGradient) {
  const st::Tensor y = f64({3, 1, 2, 1, 4, 0, -1, 0}, {2, 4});
  auto [values, indices] = y.topk(2, 1);
  EXPECT_TRUE(allclose(values, f64({3, 2, 4, 0}, {2, 2})));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 0, 1}));
  const st::Tensor w = f64({1, 2, 3, 4}, {2, 2});
  const st::Tensor g = st::grad([&](const st::Tensor& t) {
    return (std::get<0>(t.topk(2, 1)) * w).sum();
  })(y);
  EXPECT_TRUE(allclose(g, f64({1, 0, 2, 0, 3, 4, 0, 0}, {2, 4})));
  expect_contains(error_message([&] { y.topk(5, 1); }),
                  {"[strata::topk]", "k = 5", "size 4", "[2, 4]"});
}

TEST(CumsumTorchValues, IntegersSumAsInt64AndGradientIsReversedSum) {
  const st::Tensor c = i64({1, 2, 3, 4, 5, 6}, {2, 3}).cumsum(1);
  EXPECT_EQ(c.dtype(), st::kInt64);
  EXPECT_EQ(c.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  const st::Tensor weights = f64({1, 10, 100}, {1, 3});
  const st::Tensor g = st::grad([&](const st::Tensor& z) { return (z.cumsum(1) * weights).sum(); })(
      f64({1, 2, 3}, {1, 3}));
  EXPECT_TRUE(allclose(g, f64({111, 110, 100}, {1, 3})));
}

TEST(PadTorchValues, LastDimFirstNegativeCrops) {
  const st::Tensor x = st::arange(6, st::kFloat64).view({2, 3});
  EXPECT_TRUE(allclose(nn::pad(x, {1, -1, 0, 1}, "constant", 9.0),
                       f64({9, 0, 1, 9, 3, 4, 9, 9, 9}, {3, 3})));
  expect_contains(error_message([&] { nn::pad(x, {1, 2, 3}); }),
                  {"[strata::constant_pad_nd]", "even length"});
  expect_contains(error_message([&] { nn::pad(x, {0, 0, 0, 0, 1, 1}); }),
                  {"[strata::constant_pad_nd]", "pads 3 dims", "[2, 3]"});
  expect_contains(error_message([&] { nn::pad(x, {-2, -2}); }), {"negative size -1"});
  expect_contains(error_message([&] { nn::pad(x, {1, 1}, "reflect"); }),
                  {"mode \"reflect\" is not supported"});
}

TEST(IndexTorchValues, IntegerIndicesMasksAndWrites) {
  const st::Tensor a = st::arange(12, st::kFloat64).view({3, 4});
  EXPECT_TRUE(allclose(a.index({i64({2, 0, -1}, {3}), i64({1}, {1})}), f64({9, 1, 9}, {3})));
  EXPECT_TRUE(allclose(a.index({st::tensor(std::vector<bool>{true, false, true})}),
                       f64({0, 1, 2, 3, 8, 9, 10, 11}, {2, 4})));
  EXPECT_TRUE(allclose(a.masked_select(a > 5.5), f64({6, 7, 8, 9, 10, 11}, {6})));

  const st::Tensor b = a.clone();
  b.index_put_({i64({0, 0, 2}, {3})}, st::tensor({1.0}, {}), true);
  EXPECT_TRUE(allclose(b, f64({2, 3, 4, 5, 4, 5, 6, 7, 9, 10, 11, 12}, {3, 4})));

  const st::Tensor every_third = (a - (a / 3.0).floor() * 3.0) == 0.0;
  const st::Tensor c = a.index_put({every_third}, st::tensor({-1.0}, {}));
  EXPECT_TRUE(allclose(c, f64({-1, 1, 2, -1, 4, 5, -1, 7, 8, -1, 10, 11}, {3, 4})));
}

TEST(IndexErrors, BadIndicesAndValues) {
  const st::Tensor a = st::zeros({3, 4}, st::kFloat64);
  expect_contains(error_message([&] { a.index({i64({3}, {1})}); }),
                  {"[strata::index]", "index 3 is out of range for dim 0 of size 3"});
  expect_contains(error_message([&] { a.index({st::zeros({2}, st::kFloat64)}); }),
                  {"[strata::index]", "Int64 or Bool", "Float64"});
  expect_contains(error_message([&] { a.index({st::zeros({4}, st::kBool)}); }),
                  {"[strata::index]", "Bool index of shape [4]", "[3, 4]"});
  expect_contains(error_message([&] { a.index({i64({0}, {1}), i64({0}, {1}), i64({0}, {1})}); }),
                  {"[strata::index]", "too many indices"});
  expect_contains(error_message([&] { a.index_put({i64({0, 1}, {2})}, st::zeros({3, 4})); }),
                  {"[strata::index_put]", "dtype Float32", "Float64"});
  expect_contains(
      error_message([&] { a.index_put({i64({0, 1}, {2})}, st::zeros({3, 4}, st::kFloat64)); }),
      {"[strata::index_put]", "[3, 4] cannot be broadcast to the indexed shape [2, 4]"});
  expect_contains(error_message([&] { a.masked_select(st::zeros({4})); }),
                  {"[strata::masked_select]", "mask must be a Bool tensor"});
}

TEST(IndexUnderVmap, SharedMaskWorksPerSampleMaskRaises) {
  const st::Tensor xs = st::arange(24, st::kFloat64).view({2, 3, 4});
  const st::Tensor mask = st::tensor(std::vector<bool>{true, false, true});
  // The same mask for every sample: each sample's rows 0 and 2.
  const st::Tensor rows = st::vmap([&](const st::Tensor& x) { return x.index({mask}); })(xs);
  EXPECT_TRUE(allclose(rows, xs.index({st::arange(2, st::kInt64).view({2, 1}),
                                       i64({0, 2}, {2})})));
  const st::Tensor masks = xs > 10.0;
  expect_contains(error_message([&] {
                    st::vmap([](const st::Tensor& x, const st::Tensor& m) {
                      return x.masked_select(m);
                    })(xs, masks);
                  }),
                  {"[strata::masked_select]", "differs per sample", "data-dependent"});
  // Per-sample gradients through a shared mask.
  const st::Tensor g = st::vmap(st::grad([&](const st::Tensor& x) {
    return x.masked_select(mask.view({3, 1})).pow(2.0).sum();
  }))(xs);
  EXPECT_TRUE(allclose(g, xs * 2.0 * mask.view({3, 1})));
}

TEST(IndexUnderFakeTrace, MaskSizeIsDataDependent) {
  const st::Tensor x = st::zeros({3, 4}, st::kFloat64);
  const st::Tensor mask = x > 0.0;
  expect_contains(error_message([&] {
                    st::trace([](const st::Tensor& t, const st::Tensor& m) {
                      return t.masked_select(m);
                    }, {.mode = st::TraceMode::Fake})(x, mask);
                  }),
                  {"strata::masked_select", "data-dependent"});
  // Integer indices have a shape fake mode knows.
  const st::Graph g = st::trace([](const st::Tensor& t, const st::Tensor& i) { return t.index({i}); },
                                {.mode = st::TraceMode::Fake})(x, i64({0, 2}, {2}));
  EXPECT_EQ(g.op_names(), (std::vector<std::string>{"strata::index.Tensor"}));
}

TEST(InPlaceBinary, PowAndAtan2BumpTheVersionAndDifferentiate) {
  const st::Tensor x = f64({1, 2, 3}, {3});
  const st::Tensor y = x.clone();
  const uint32_t before = y.impl()->version();
  y.pow_(f64({2, 2, 2}, {3}));
  EXPECT_GT(y.impl()->version(), before);
  EXPECT_TRUE(allclose(y, f64({1, 4, 9}, {3})));
  const st::Tensor g = st::grad([](const st::Tensor& t) {
    const st::Tensor u = t * 1.0;
    u.atan2_(st::ones_like(t));
    return u.sum();
  })(x);
  EXPECT_TRUE(allclose(g, 1.0 / (x * x + 1.0)));
  expect_contains(error_message([&] { i64({1}, {1}).atan2_(i64({1}, {1})); }),
                  {"[strata::atan2_]"});
}

}  // namespace
