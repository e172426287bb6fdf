// Ghost clipping (distributed/dp/ghost_clipping.h) against the per-sample path:
// the clipped sums of vmap(grad) per-sample gradients through clip_and_sum, on
// the MLP and the CNN of the benchmarks and on linear layers over sequences, in
// Float64; and its refusals.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <algorithm>
#include <vector>

#include "examples/models.h"
#include "tests/distributed/dist_test_support.h"

namespace st = strata;
using dist_test::Params;

namespace {

Params to_float64(const Params& p) {
  return st::tree::map(p, [](const st::Tensor& t) { return t.to(st::kFloat64); });
}

// A bound between the smallest and the largest per-sample norm, so that some
// samples are clipped and some are not.
double middle_bound(const st::Tensor& norms) {
  std::vector<double> v = norms.to_vector<double>();
  std::sort(v.begin(), v.end());
  EXPECT_LT(v.front(), v.back());
  return 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void expect_same_sums(const Params& ghost, const Params& reference) {
  ASSERT_EQ(ghost.size(), reference.size());
  for (const auto& [name, t] : reference) {
    EXPECT_LE(dist_test::relative_difference(ghost.at(name), t), 1e-10) << name;
  }
}

// Ghost against per-sample clipping, flat and per layer (bounds of the leaves'
// own middle norms, so each leaf is clipped for some samples).
template <class SampleLoss, class GhostLoss>
void compare(SampleLoss sample_loss, GhostLoss ghost_loss, const Params& params,
             const st::Tensor& x, const st::Tensor& y) {
  const Params per_sample =
      st::vmap(st::grad(sample_loss), {.in_dims = {st::none, 0, 0}})(params, x, y);
  const auto loss = st::dp::ghost(ghost_loss);

  const auto unclipped = st::dp::clip_and_sum(per_sample, 1e300);
  const double bound = middle_bound(unclipped.norms);
  const auto reference = st::dp::clip_and_sum(per_sample, bound);
  const auto ghost = st::dp::ghost_clip_and_sum(loss, params, x, y, {bound}, false);
  expect_same_sums(ghost.sum, reference.sum);
  EXPECT_LE(dist_test::relative_difference(ghost.norms, reference.norms), 1e-10);

  std::vector<double> bounds;
  const st::Tensor leaf_norms =
      st::dp::clip_and_sum_per_layer(per_sample, std::vector<double>(params.size(), 1e300)).norms;
  for (int64_t i = 0; i < leaf_norms.size(1); ++i) {
    bounds.push_back(middle_bound(leaf_norms.select(1, i)));
  }
  const auto per_layer = st::dp::clip_and_sum_per_layer(per_sample, bounds);
  const auto ghost_per_layer = st::dp::ghost_clip_and_sum(loss, params, x, y, bounds, true);
  expect_same_sums(ghost_per_layer.sum, per_layer.sum);
  EXPECT_LE(dist_test::relative_difference(ghost_per_layer.norms, per_layer.norms), 1e-10);
}

TEST(GhostClipping, MlpEqualsPerSampleClipping) {
  const int64_t batch = 12;
  compare(&models::mlp_sample_loss, &models::mlp_ghost_loss, to_float64(models::mlp_params()),
          models::det({batch, 784}, 0.37).to(st::kFloat64), models::peer_labels(batch));
}

TEST(GhostClipping, CnnEqualsPerSampleClipping) {
  const int64_t batch = 6;
  compare(&models::cnn_sample_loss, &models::cnn_ghost_loss, to_float64(models::cnn_params()),
          models::det({batch, 1, 28, 28}, 0.37).to(st::kFloat64), models::peer_labels(batch));
}

// Linear layers over T positions: norms from the T x T Gram matrices (T^2 <=
// in * out) or from the per-sample weight gradients (T^2 > in * out).
Params sequence_params(int64_t in, int64_t hidden) {
  return to_float64({{"w1", models::det({hidden, in}, 0.43) * 0.5},
                     {"b1", models::det({hidden}, 0.29) * 0.1},
                     {"w2", models::det({3, hidden}, 0.71) * 0.5}});
}

st::Tensor sequence_logits(const Params& p, const st::Tensor& h) {
  return st::nn::linear(h.mean({1}), p.at("w2"));
}

st::Tensor sequence_sample_loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  const st::Tensor h = st::nn::linear(x.unsqueeze(0), p.at("w1"), p.at("b1")).tanh();
  return st::nn::cross_entropy(sequence_logits(p, h), y.unsqueeze(0));
}

st::Tensor sequence_ghost_loss(const Params& p, const st::Tensor& x, const st::Tensor& y,
                               st::dp::GhostTape& tape) {
  const st::Tensor h = tape.linear(x, p.at("w1"), p.at("b1")).tanh();
  return st::nn::cross_entropy(tape.linear(h.mean({1}), p.at("w2")), y, st::nn::Reduction::None);
}

st::Tensor sequence_labels(int64_t batch) {
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < batch; ++i) labels.push_back((i * 2 + 1) % 3);
  return st::tensor(labels, {batch});
}

TEST(GhostClipping, LinearOverSequencesByGramMatrices) {
  const int64_t batch = 8;
  const st::Tensor x = models::det({batch, 3, 8}, 0.53).to(st::kFloat64);
  compare(&sequence_sample_loss, &sequence_ghost_loss, sequence_params(8, 6), x,
          sequence_labels(batch));
}

TEST(GhostClipping, LinearOverSequencesByPerSampleWeights) {
  const int64_t batch = 8;
  const st::Tensor x = models::det({batch, 9, 2}, 0.53).to(st::kFloat64);
  compare(&sequence_sample_loss, &sequence_ghost_loss, sequence_params(2, 3), x,
          sequence_labels(batch));
}

// private_gradient over one process: the ghost route (in chunks or whole) and
// the per-sample route give the same step.
TEST(GhostClipping, PrivateGradientEqualsThePerSampleRoute) {
  const int64_t batch = 10;
  const Params params = to_float64(models::mlp_params());
  const st::Tensor x = models::det({batch, 784}, 0.37).to(st::kFloat64);
  const st::Tensor y = models::peer_labels(batch);
  const st::dist::LocalGroup group;
  for (int64_t physical : {0, 4}) {
    const st::dp::DpSgdOptions options{.noise_multiplier = 0.7, .max_grad_norm = 0.05,
                                       .noise_seed = 3, .physical_batch = physical};
    const Params reference = st::dp::private_gradient(group, &models::mlp_sample_loss, params, x,
                                                      y, 2, 8.0, options);
    const Params ghost = st::dp::private_gradient(
        group, st::dp::ghost(&models::mlp_ghost_loss), params, x, y, 2, 8.0, options);
    expect_same_sums(ghost, reference);
  }
}

TEST(GhostClipping, AnEmptyBatchGivesZeros) {
  const Params params = to_float64(models::mlp_params());
  const auto result =
      st::dp::ghost_clip_and_sum(st::dp::ghost(&models::mlp_ghost_loss), params,
                                 st::zeros({0, 784}, st::kFloat64),
                                 st::zeros({0}, st::kInt64), {1.0}, false);
  for (const auto& [name, t] : result.sum) {
    EXPECT_EQ(t.sizes(), params.at(name).sizes()) << name;
    EXPECT_EQ(t.abs().amax().item<double>(), 0.0) << name;
  }
}

TEST(GhostClipping, ALeafOutsideTheTapeIsRefused) {
  const Params params = to_float64(models::mlp_params());
  const st::Tensor x = models::det({4, 784}, 0.37).to(st::kFloat64);
  const st::Tensor y = models::peer_labels(4);
  // b2 also reaches the loss directly.
  auto also_direct = [](const Params& p, const st::Tensor& x, const st::Tensor& y,
                        st::dp::GhostTape& tape) {
    return models::mlp_ghost_loss(p, x, y, tape) + p.at("b2").sum();
  };
  std::string message = dist_test::error_of(
      [&] { st::dp::ghost_clip_and_sum(st::dp::ghost(also_direct), params, x, y, {1.0}, false); });
  EXPECT_NE(message.find("parameter leaf 1 reaches the loss outside its GhostTape layer"),
            std::string::npos)
      << message;
  // b1 is never given to a layer.
  auto no_bias = [](const Params& p, const st::Tensor& x, const st::Tensor& y,
                    st::dp::GhostTape& tape) {
    const st::Tensor h = tape.linear(x, p.at("w1")).relu() + p.at("b1");
    return st::nn::cross_entropy(tape.linear(h, p.at("w2"), p.at("b2")), y,
                                 st::nn::Reduction::None);
  };
  message = dist_test::error_of(
      [&] { st::dp::ghost_clip_and_sum(st::dp::ghost(no_bias), params, x, y, {1.0}, false); });
  EXPECT_NE(message.find("parameter leaf 0 is taken by 0 GhostTape layers"), std::string::npos)
      << message;
  // A view of a leaf is not the leaf.
  auto view = [](const Params& p, const st::Tensor& x, const st::Tensor& y,
                 st::dp::GhostTape& tape) {
    const st::Tensor h = tape.linear(x, p.at("w1").view({128, 784}), p.at("b1")).relu();
    return st::nn::cross_entropy(tape.linear(h, p.at("w2"), p.at("b2")), y,
                                 st::nn::Reduction::None);
  };
  message = dist_test::error_of(
      [&] { st::dp::ghost_clip_and_sum(st::dp::ghost(view), params, x, y, {1.0}, false); });
  EXPECT_NE(message.find("must be a parameter leaf itself"), std::string::npos) << message;
}

}  // namespace
