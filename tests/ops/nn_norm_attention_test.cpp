// group_norm, batch_norm, scaled_dot_product_attention and conv1d: bad input names
// the op and what was wrong; batch_norm's running statistics move by momentum in
// place (not under any transform's gradient), and what vmap does with them.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;
namespace nn = strata::nn;

namespace {

using strata::testing::allclose;
using strata::testing::error_message;
using strata::testing::expect_contains;

TEST(GroupNormErrors, GroupsMustDivideChannels) {
  const st::Tensor x = st::zeros({2, 6, 4});
  expect_contains(error_message([&] { nn::group_norm(x, 4); }),
                  {"[strata::group_norm]", "num_groups (4)", "channels (6)", "[2, 6, 4]"});
  expect_contains(error_message([&] { nn::group_norm(x, 0); }), {"num_groups (0)"});
  expect_contains(error_message([&] { nn::group_norm(x, 3, st::ones({4})); }),
                  {"[strata::group_norm]", "weight must have shape [6]", "[4]"});
  expect_contains(error_message([&] { nn::group_norm(st::zeros({6}), 3); }),
                  {"[strata::group_norm]", "rank at least 2", "[6]"});
}

TEST(AttentionErrors, ShapesMasksAndDtypes) {
  const st::Tensor q = st::zeros({2, 4, 3});
  const st::Tensor k = st::zeros({2, 5, 3});
  const st::Tensor v = st::zeros({2, 5, 6});
  const char* op = "[strata::scaled_dot_product_attention]";
  expect_contains(error_message([&] {
                    nn::scaled_dot_product_attention(q, st::zeros({2, 5, 2}), v);
                  }),
                  {op, "same embedding size", "query [2, 4, 3]", "key [2, 5, 2]"});
  expect_contains(error_message([&] {
                    nn::scaled_dot_product_attention(q, k, st::zeros({2, 4, 6}));
                  }),
                  {op, "same sequence length", "value [2, 4, 6]"});
  expect_contains(error_message([&] {
                    nn::scaled_dot_product_attention(q, k, v, st::zeros({4, 4}, st::kBool));
                  }),
                  {op, "attn_mask of shape [4, 4]", "scores' shape [2, 4, 5]"});
  expect_contains(error_message([&] {
                    nn::scaled_dot_product_attention(q, k, v, st::zeros({4, 5}, st::kInt64));
                  }),
                  {op, "attn_mask must be Bool", "Int64"});
  expect_contains(error_message([&] {
                    nn::scaled_dot_product_attention(q, k, v, st::zeros({4, 5}, st::kBool), true);
                  }),
                  {op, "either attn_mask or is_causal"});
  expect_contains(
      error_message([&] { nn::scaled_dot_product_attention(q, k.to(st::kFloat64), v); }),
      {op, "one floating-point dtype", "Float64"});
}

TEST(BatchNormErrors, EvaluationNeedsRunningStatistics) {
  const st::Tensor x = st::zeros({4, 3});
  expect_contains(error_message([&] { nn::batch_norm(x, std::nullopt, std::nullopt); }),
                  {"[strata::batch_norm]", "running_mean and running_var must be given"});
  expect_contains(error_message([&] { nn::batch_norm(x, st::zeros({3}), std::nullopt); }),
                  {"[strata::batch_norm]", "given together"});
  expect_contains(error_message([&] { nn::batch_norm(x, st::zeros({2}), st::ones({2})); }),
                  {"[strata::batch_norm]", "running_mean must have shape [3]", "[2]"});
  expect_contains(error_message([&] {
                    nn::batch_norm(st::zeros({1, 3}), std::nullopt, std::nullopt, std::nullopt,
                                   std::nullopt, /*training=*/true);
                  }),
                  {"[strata::batch_norm]", "more than 1 value per channel"});
}

TEST(Conv1dErrors, NeedsRankThreeOperands) {
  expect_contains(error_message([&] {
                    nn::conv1d(st::zeros({3, 8}), st::zeros({4, 3, 3}), std::nullopt);
                  }),
                  {"[strata::conv1d]", "[N, C, L]", "[3, 8]"});
  expect_contains(error_message([&] {
                    nn::conv1d(st::zeros({1, 3, 8}), st::zeros({4, 3, 3}), std::nullopt,
                               st::IntArrayRef({1, 1}));
                  }),
                  {"[strata::conv1d]", "one value each"});
}

// x [4, 2]: channel 0 holds 1, 2, 3, 6 (mean 3, unbiased variance 14 / 3), channel 1
// holds 0, 0, 0, 4 (mean 1, unbiased variance 4).
st::Tensor two_channels() { return st::tensor({1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 6.0, 4.0}, {4, 2}); }

TEST(BatchNorm, TrainingMovesTheRunningStatisticsByMomentum) {
  const st::Tensor mean = st::tensor({1.0, -1.0}, {2});
  const st::Tensor var = st::tensor({2.0, 1.0}, {2});
  const uint32_t version = mean.version();
  const st::Tensor y = nn::batch_norm(two_channels(), mean, var, std::nullopt, std::nullopt,
                                      /*training=*/true, /*momentum=*/0.25, /*eps=*/0.0);
  EXPECT_GT(mean.version(), version);
  EXPECT_TRUE(allclose(mean, st::tensor({0.75 * 1.0 + 0.25 * 3.0, 0.75 * -1.0 + 0.25 * 1.0}, {2})));
  EXPECT_TRUE(
      allclose(var, st::tensor({0.75 * 2.0 + 0.25 * 14.0 / 3.0, 0.75 * 1.0 + 0.25 * 4.0}, {2})));
  // Normalised by the batch's biased variance: 3.5 and 3.
  const double s0 = std::sqrt(3.5), s1 = std::sqrt(3.0);
  EXPECT_TRUE(allclose(
      y, st::tensor({-2 / s0, -1 / s1, -1 / s0, -1 / s1, 0.0, -1 / s1, 3 / s0, 3 / s1}, {4, 2})));
}

TEST(BatchNorm, EvaluationUsesTheRunningStatisticsAndLeavesThem) {
  const st::Tensor mean = st::tensor({1.0, -1.0}, {2});
  const st::Tensor var = st::tensor({4.0, 1.0}, {2});
  const st::Tensor w = st::tensor({2.0, 1.0}, {2});
  const st::Tensor b = st::tensor({0.5, 0.0}, {2});
  const st::Tensor y = nn::batch_norm(two_channels(), mean, var, w, b, false, 0.1, 0.0);
  EXPECT_TRUE(allclose(y, st::tensor({0.5, 1.0, 1.5, 1.0, 2.5, 1.0, 5.5, 5.0}, {4, 2})));
  EXPECT_TRUE(allclose(mean, st::tensor({1.0, -1.0}, {2})));
  EXPECT_TRUE(allclose(var, st::tensor({4.0, 1.0}, {2})));
}

// Under grad the running statistics still move, and the gradient is that of the
// function without them: no gradient flows through the update.
TEST(BatchNorm, GradUpdatesTheStatisticsWithoutDifferentiatingThem) {
  const st::Tensor w = st::tensor({1.5, -0.5}, {2});
  const st::Tensor mean = st::zeros({2}, st::kFloat64);
  const st::Tensor var = st::ones({2}, st::kFloat64);
  auto loss = [&](const st::Tensor& weight, bool with_stats) {
    const std::optional<st::Tensor> m = with_stats ? std::optional(mean) : std::nullopt;
    const std::optional<st::Tensor> v = with_stats ? std::optional(var) : std::nullopt;
    return (nn::batch_norm(two_channels(), m, v, weight, std::nullopt, true).square() *
            two_channels())
        .sum();
  };
  const st::Tensor with = st::grad([&](const st::Tensor& p) { return loss(p, true); })(w);
  const st::Tensor without = st::grad([&](const st::Tensor& p) { return loss(p, false); })(w);
  EXPECT_TRUE(allclose(with, without));
  EXPECT_TRUE(allclose(mean, st::tensor({0.3, 0.1}, {2})));
}

// As with PyTorch's vmap: per-sample batches without running statistics are each
// normalised by their own statistics; a batched input cannot update shared running
// statistics in place (one tensor cannot hold a value per sample).
TEST(BatchNorm, UnderVmap) {
  st::Generator gen(7);
  const st::Tensor xs = st::randn({3, 4, 2}, gen, st::kFloat64);
  auto f = [](const st::Tensor& x) {
    return nn::batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true);
  };
  const st::Tensor out = st::vmap(f)(xs);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(allclose(out.select(0, i), f(xs.select(0, i))));
  const st::Tensor mean = st::zeros({2}, st::kFloat64);
  const st::Tensor var = st::ones({2}, st::kFloat64);
  auto with_stats = [&](const st::Tensor& x) {
    return nn::batch_norm(x, mean, var, std::nullopt, std::nullopt, true);
  };
  EXPECT_THROW(st::vmap(with_stats)(xs), st::Error);
}

// Attention with a causal mask equals the one with the explicit lower-triangular
// Bool mask, and an all-zero additive mask changes nothing.
TEST(Attention, CausalAndMaskForms) {
  st::Generator gen(8);
  const st::Tensor q = st::randn({2, 3, 4, 5}, gen, st::kFloat64);
  const st::Tensor k = st::randn({2, 3, 4, 5}, gen, st::kFloat64);
  const st::Tensor v = st::randn({2, 3, 4, 2}, gen, st::kFloat64);
  const st::Tensor lower = st::arange(4).unsqueeze(1) >= st::arange(4).unsqueeze(0);
  EXPECT_TRUE(allclose(nn::scaled_dot_product_attention(q, k, v, std::nullopt, true),
                       nn::scaled_dot_product_attention(q, k, v, lower)));
  EXPECT_TRUE(allclose(nn::scaled_dot_product_attention(q, k, v, st::zeros({4, 4}, st::kFloat64)),
                       nn::scaled_dot_product_attention(q, k, v)));
  // The last query attends to every key under the causal mask: row 3 is unmasked.
  const st::Tensor unmasked = nn::scaled_dot_product_attention(q, k, v);
  EXPECT_TRUE(allclose(nn::scaled_dot_product_attention(q, k, v, std::nullopt, true).select(2, 3),
                       unmasked.select(2, 3)));
}

// A mask per sample (padding differs between sequences) batched by vmap, Bool and
// additive, with and without batched q/k/v: vmap and vmap(grad) against a loop.
class AttentionPerSampleMask : public ::testing::TestWithParam<bool> {};

st::Tensor per_sample_mask(bool boolean, st::Generator& gen) {
  // [B, L, S]: sample b keeps keys 0..b+1 for every query (and key 0 always).
  const st::Tensor keys = st::arange(5).reshape({1, 1, 5});
  const st::Tensor lengths = (st::arange(3) + 2).reshape({3, 1, 1});
  const st::Tensor keep = (keys < lengths).expand({3, 4, 5}).contiguous();
  if (boolean) return keep;
  // Additive: noise on the kept keys, -30 on the others.
  return st::randn({3, 4, 5}, gen, st::kFloat64) + (keep.to(st::kFloat64) - 1.0) * 30.0;
}

TEST_P(AttentionPerSampleMask, VmapAndVmapGradMatchALoop) {
  st::Generator gen(11);
  const st::Tensor qs = st::randn({3, 2, 4, 3}, gen, st::kFloat64);
  const st::Tensor ks = st::randn({3, 2, 5, 3}, gen, st::kFloat64);
  const st::Tensor vs = st::randn({3, 2, 5, 2}, gen, st::kFloat64);
  const st::Tensor masks = per_sample_mask(GetParam(), gen);
  auto attend = [](const st::Tensor& q, const st::Tensor& k, const st::Tensor& v,
                   const st::Tensor& m) { return nn::scaled_dot_product_attention(q, k, v, m); };
  auto loss = [&](const st::Tensor& q, const st::Tensor& k, const st::Tensor& v,
                  const st::Tensor& m) { return (attend(q, k, v, m) * v.sum({1}, true)).sum(); };
  const bool fallback = st::batching::loop_fallback_enabled();
  st::batching::set_loop_fallback_enabled(false);
  const st::Tensor out = st::vmap(attend)(qs, ks, vs, masks);
  // Only the mask batched: one q, k, v shared by every sample.
  const st::Tensor shared = st::vmap(attend, {.in_dims = {std::nullopt, std::nullopt,
                                                          std::nullopt, 0}})(
      qs.select(0, 0), ks.select(0, 0), vs.select(0, 0), masks);
  const auto grads = st::vmap(st::grad<0, 1, 2>(loss))(qs, ks, vs, masks);
  st::batching::set_loop_fallback_enabled(fallback);
  for (int64_t b = 0; b < 3; ++b) {
    const st::Tensor q = qs.select(0, b), k = ks.select(0, b), v = vs.select(0, b);
    const st::Tensor m = masks.select(0, b);
    EXPECT_TRUE(allclose(out.select(0, b), attend(q, k, v, m))) << "sample " << b;
    EXPECT_TRUE(allclose(shared.select(0, b),
                         attend(qs.select(0, 0), ks.select(0, 0), vs.select(0, 0), m)))
        << "sample " << b;
    const auto g = st::grad<0, 1, 2>(loss)(q, k, v, m);
    EXPECT_TRUE(allclose(std::get<0>(grads).select(0, b), std::get<0>(g))) << "dq, sample " << b;
    EXPECT_TRUE(allclose(std::get<1>(grads).select(0, b), std::get<1>(g))) << "dk, sample " << b;
    EXPECT_TRUE(allclose(std::get<2>(grads).select(0, b), std::get<2>(g))) << "dv, sample " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(BoolAndAdditive, AttentionPerSampleMask, ::testing::Values(true, false));

// The additive mask's own per-sample gradient, with the mask's batch dim last and a
// key-padding mask [1, S] per sample that broadcasts over the queries.
TEST(AttentionMaskUnderVmap, AdditiveMaskGradientAndBatchDimLast) {
  st::Generator gen(12);
  const st::Tensor qs = st::randn({3, 2, 4, 3}, gen, st::kFloat64);
  const st::Tensor ks = st::randn({3, 2, 5, 3}, gen, st::kFloat64);
  const st::Tensor vs = st::randn({3, 2, 5, 2}, gen, st::kFloat64);
  const st::Tensor masks = st::randn({1, 5, 3}, gen, st::kFloat64);  // batch last
  auto loss = [](const st::Tensor& q, const st::Tensor& k, const st::Tensor& v,
                 const st::Tensor& m) {
    return nn::scaled_dot_product_attention(q, k, v, m).square().sum();
  };
  const bool fallback = st::batching::loop_fallback_enabled();
  st::batching::set_loop_fallback_enabled(false);
  const auto grads = st::vmap(st::grad<0, 3>(loss), {.in_dims = {0, 0, 0, -1}})(qs, ks, vs, masks);
  st::batching::set_loop_fallback_enabled(fallback);
  for (int64_t b = 0; b < 3; ++b) {
    const auto g = st::grad<0, 3>(loss)(qs.select(0, b), ks.select(0, b), vs.select(0, b),
                                        masks.select(-1, b));
    EXPECT_TRUE(allclose(std::get<0>(grads).select(0, b), std::get<0>(g))) << "dq, sample " << b;
    EXPECT_TRUE(allclose(std::get<1>(grads).select(0, b), std::get<1>(g)))
        << "d mask, sample " << b;
  }
}

}  // namespace
