// The DP-SGD pieces that need no MPI: clipping, Poisson sampling, the noise and
// the DP-SGD step on a one-process group, each against a direct computation.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <numeric>
#include <set>

#include "tests/distributed/dist_test_support.h"

namespace st = strata;
using dist_test::Params;

namespace {

Params per_sample_tree(int64_t batch, uint64_t seed) {
  st::Generator gen(seed);
  return {{"a", st::randn({batch, 3, 2}, gen, st::kFloat64) * 2.0},
          {"b", st::randn({batch, 4}, gen, st::kFloat64)},
          {"c", st::randn({batch}, gen, st::kFloat64) * 3.0}};
}

// Sample b's gradient scaled by min(1, C / (norm + 1e-6)), summed over b, leaf by
// leaf; norm over all leaves (flat) or over each leaf alone (per layer).
Params reference_clip(const Params& g, const std::vector<double>& bounds, bool per_layer) {
  Params sum;
  const int64_t batch = g.begin()->second.size(0);
  for (const auto& [name, t] : g) sum[name] = st::zeros_like(t.select(0, 0));
  for (int64_t b = 0; b < batch; ++b) {
    double total = 0;
    for (const auto& [name, t] : g) total += t.select(0, b).square().sum().item<double>();
    size_t layer = 0;
    for (const auto& [name, t] : g) {
      const double norm =
          per_layer ? std::sqrt(t.select(0, b).square().sum().item<double>()) : std::sqrt(total);
      const double bound = per_layer ? bounds[layer++] : bounds[0];
      sum[name] = sum[name] + t.select(0, b) * std::min(1.0, bound / (norm + 1e-6));
    }
  }
  return sum;
}

TEST(Clipping, FlatMatchesAPerSampleLoop) {
  const Params g = per_sample_tree(6, 1);
  const auto clipped = st::dp::clip_and_sum(g, 2.0);
  EXPECT_LT(dist_test::max_relative_difference(clipped.sum, reference_clip(g, {2.0}, false)),
            1e-12);
  ASSERT_EQ(clipped.norms.dim(), 1);
  EXPECT_EQ(clipped.norms.size(0), 6);
}

TEST(Clipping, PerLayerMatchesAPerSampleLoop) {
  const Params g = per_sample_tree(5, 2);
  const std::vector<double> bounds = {1.0, 0.5, 2.0};
  const auto clipped = st::dp::clip_and_sum_per_layer(g, bounds);
  EXPECT_LT(dist_test::max_relative_difference(clipped.sum, reference_clip(g, bounds, true)),
            1e-12);
  EXPECT_EQ(clipped.norms.size(1), 3);
}

TEST(Clipping, EveryClippedSampleHasNormAtMostTheBound) {
  const Params g = per_sample_tree(4, 3);
  for (int64_t b = 0; b < 4; ++b) {
    Params one;
    for (const auto& [name, t] : g) one[name] = t.narrow(0, b, 1);
    double squares = 0;
    for (const auto& [name, t] : st::dp::clip_and_sum(one, 0.25).sum) {
      squares += t.square().sum().item<double>();
    }
    EXPECT_LE(std::sqrt(squares), 0.25 + 1e-12);
  }
}

TEST(Clipping, Float32LeavesStayFloat32) {
  st::Generator gen(4);
  const std::vector<st::Tensor> g = {st::randn({3, 5}, gen, st::kFloat32)};
  const auto clipped = st::dp::clip_and_sum(g, 1.0);
  EXPECT_EQ(clipped.sum[0].dtype(), st::kFloat32);
  EXPECT_EQ(clipped.sum[0].size(0), 5);
}

TEST(Clipping, AnEmptyBatchSumsToZeros) {
  const Params g = per_sample_tree(0, 5);
  const auto clipped = st::dp::clip_and_sum(g, 1.0);
  EXPECT_EQ(clipped.sum.at("a").sizes().size(), 2u);
  EXPECT_EQ(clipped.sum.at("a").abs().sum().item<double>(), 0.0);
  EXPECT_EQ(clipped.sum.at("c").dim(), 0);
}

TEST(Clipping, BadArgumentsAreErrors) {
  const Params g = per_sample_tree(3, 6);
  EXPECT_NE(dist_test::error_of([&] { st::dp::clip_and_sum(g, 0.0); }).find("not positive"),
            std::string::npos);
  EXPECT_NE(dist_test::error_of([&] { st::dp::clip_and_sum_per_layer(g, {1.0}); })
                .find("1 clipping bounds for 3 leaves"),
            std::string::npos);
  Params ragged = g;
  ragged["b"] = ragged["b"].narrow(0, 0, 2);
  EXPECT_NE(dist_test::error_of([&] { st::dp::clip_and_sum(ragged, 1.0); }).find("leaf 1"),
            std::string::npos);
}

TEST(PoissonSampling, ShardsCoverTheDatasetOnce) {
  for (int world = 1; world <= 5; ++world) {
    int64_t next = 0;
    for (int r = 0; r < world; ++r) {
      const st::dp::Shard s = st::dp::shard(13, r, world);
      EXPECT_EQ(s.begin, next);
      next = s.end;
    }
    EXPECT_EQ(next, 13);
  }
  EXPECT_EQ(st::dp::shard(2, 0, 3).size(), 0);
}

TEST(PoissonSampling, TheShardsUnionIsTheWholeDatasetsSample) {
  const st::dp::PoissonSampler sampler(1000, 0.05, 7);
  for (int64_t step : {0, 1, 17}) {
    const std::vector<int64_t> whole = sampler.sample(step);
    for (int world : {2, 3}) {
      std::vector<int64_t> joined;
      for (int r = 0; r < world; ++r) {
        const std::vector<int64_t> part = sampler.sample(step, st::dp::shard(1000, r, world));
        joined.insert(joined.end(), part.begin(), part.end());
      }
      EXPECT_EQ(joined, whole) << "step " << step << ", " << world << " ranks";
    }
  }
  EXPECT_NE(sampler.sample(0), sampler.sample(1));
}

// Over 200 steps of 1000 samples at q = 0.05 the sample count is Binomial(2e5,
// 0.05): mean 1e4, sd 97.5; 6 sd is a false failure rate below 1e-8.
TEST(PoissonSampling, TakesEachSampleWithProbabilityQ) {
  const st::dp::PoissonSampler sampler(1000, 0.05, 11);
  int64_t taken = 0;
  std::vector<int64_t> per_sample(1000, 0);
  for (int64_t step = 0; step < 200; ++step) {
    for (int64_t i : sampler.sample(step)) {
      ++taken;
      ++per_sample[static_cast<size_t>(i)];
    }
  }
  EXPECT_NEAR(static_cast<double>(taken), 1e4, 6 * 97.5);
  EXPECT_DOUBLE_EQ(sampler.expected_batch_size(), 50.0);
}

TEST(PoissonSampling, BadArgumentsAreErrors) {
  EXPECT_NE(dist_test::error_of([] { st::dp::PoissonSampler(10, 1.5, 0); }).find("sample rate"),
            std::string::npos);
  const st::dp::PoissonSampler sampler(10, 0.5, 0);
  EXPECT_NE(dist_test::error_of([&] { sampler.sample(0, {5, 11}); }).find("not inside"),
            std::string::npos);
  EXPECT_NE(dist_test::error_of([] { st::dp::shard(10, 3, 3); }).find("rank 3"),
            std::string::npos);
}

TEST(Noise, IsAFunctionOfSeedAndStep) {
  auto draw = [](uint64_t seed, int64_t step) {
    const std::vector<st::Tensor> leaves = {st::zeros({3, 4}), st::zeros({5}, st::kFloat64)};
    st::dp::add_noise(leaves, 2.0, seed, step);
    return leaves;
  };
  const auto a = draw(1, 3), b = draw(1, 3), c = draw(1, 4), d = draw(2, 3);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].to_vector<double>(), b[i].to_vector<double>());
    EXPECT_NE(a[i].to_vector<double>(), c[i].to_vector<double>());
    EXPECT_NE(a[i].to_vector<double>(), d[i].to_vector<double>());
  }
  EXPECT_EQ(a[0].dtype(), st::kFloat32);
}

TEST(DpSgd, SensitivityIsTheBoundOfTheWholeSample) {
  EXPECT_DOUBLE_EQ(st::dp::sensitivity({.max_grad_norm = 1.5}), 1.5);
  EXPECT_DOUBLE_EQ(st::dp::sensitivity({.max_grad_norms = {3.0, 4.0}}), 5.0);
}

// Without noise and with a bound no sample reaches, the private gradient is the
// plain gradient sum divided by q N.
TEST(DpSgd, WithoutNoiseOrClippingItIsTheSummedGradientOverQN) {
  const Params p = dist_test::mlp_params(5, 7, 3, st::kFloat64, 1);
  st::Generator gen(2);
  const st::Tensor x = st::randn({6, 5}, gen, st::kFloat64);
  const st::Tensor y = st::randint(0, 3, {6}, gen);
  const Params g = st::dp::private_gradient(st::dist::LocalGroup{}, dist_test::mlp_sample_loss, p,
                                            x, y, 0, 4.0,
                                            {.noise_multiplier = 0.0, .max_grad_norm = 1e9});
  auto batch_loss = [](const Params& q, const st::Tensor& xs, const st::Tensor& ys) {
    const st::Tensor h = st::nn::linear(xs, q.at("w1"), q.at("b1")).tanh();
    return st::nn::cross_entropy(st::nn::linear(h, q.at("w2"), q.at("b2")), ys);
  };
  const Params mean_grad = st::grad(batch_loss)(p, x, y);  // mean over 6 samples
  Params expected;
  for (const auto& [name, t] : mean_grad) expected[name] = t * (6.0 / 4.0);
  EXPECT_LT(dist_test::max_relative_difference(g, expected), 1e-12);
}

TEST(DpSgd, PhysicalBatchesGiveTheSameGradient) {
  const Params p = dist_test::mlp_params(5, 7, 3, st::kFloat64, 3);
  st::Generator gen(4);
  const st::Tensor x = st::randn({7, 5}, gen, st::kFloat64);
  const st::Tensor y = st::randint(0, 3, {7}, gen);
  st::dp::DpSgdOptions options{.noise_multiplier = 1.0, .max_grad_norm = 0.3, .noise_seed = 5};
  const Params whole = st::dp::private_gradient(st::dist::LocalGroup{},
                                                dist_test::mlp_sample_loss, p, x, y, 2, 7.0,
                                                options);
  options.physical_batch = 3;
  const Params chunked = st::dp::private_gradient(st::dist::LocalGroup{},
                                                  dist_test::mlp_sample_loss, p, x, y, 2, 7.0,
                                                  options);
  EXPECT_LT(dist_test::max_relative_difference(chunked, whole), 1e-12);
}

TEST(DpSgd, AnEmptyBatchGivesTheNoiseOverQN) {
  const Params p = dist_test::mlp_params(5, 7, 3, st::kFloat64, 5);
  const st::Tensor x = st::zeros({0, 5}, st::kFloat64);
  const st::Tensor y = st::tensor(std::vector<int64_t>{}, {0});
  const st::dp::DpSgdOptions options{.noise_multiplier = 2.0, .max_grad_norm = 0.5,
                                     .noise_seed = 9};
  const Params g = st::dp::private_gradient(st::dist::LocalGroup{}, dist_test::mlp_sample_loss, p,
                                            x, y, 3, 10.0, options);
  Params noise = dist_test::clone(p);
  std::vector<st::Tensor> leaves;
  for (auto& [name, t] : noise) {
    t.zero_();
    leaves.push_back(t);
  }
  st::dp::add_noise(leaves, 2.0 * 0.5, 9, 3);
  for (auto& [name, t] : noise) t = t / 10.0;
  EXPECT_LT(dist_test::max_relative_difference(g, noise), 1e-15);
}

TEST(DpSgd, StepsCountForTheAccountant) {
  Params p = dist_test::mlp_params(5, 7, 3, st::kFloat64, 6);
  st::Generator gen(7);
  const st::Tensor x = st::randn({40, 5}, gen, st::kFloat64);
  const st::Tensor y = st::randint(0, 3, {40}, gen);
  st::dp::DpSgd<st::dist::LocalGroup> optimizer({}, st::dp::PoissonSampler(40, 0.25, 1),
                                                {.noise_multiplier = 1.0, .max_grad_norm = 1.0},
                                                0.1);
  EXPECT_EQ(optimizer.epsilon(1e-5), 0.0);
  for (int i = 0; i < 3; ++i) optimizer.step(dist_test::mlp_sample_loss, p, x, y);
  EXPECT_EQ(optimizer.steps_taken(), 3);
  EXPECT_DOUBLE_EQ(optimizer.epsilon(1e-5), st::dp::epsilon(0.25, 1.0, 3, 1e-5));
  EXPECT_NE(dist_test::error_of([&] { optimizer.step(dist_test::mlp_sample_loss, p, x.narrow(0, 0, 39), y); })
                .find("need 40 rows"),
            std::string::npos);
}

// With every sample taken (q = 1), no noise and no clipping, the private
// gradient of the loss sum(w * x) is the samples' x, here c for all; so heavy-ball
// momentum 0.5 moves w by lr (1, 1.5, 1.75) c over three steps. A run resumed at
// step 2 from the momentum buffers continues it exactly.
TEST(DpSgd, MomentumAccumulatesTheVelocityAndResumesFromItsBuffers) {
  auto loss = [](const Params& q, const st::Tensor& x, const st::Tensor&) {
    return (q.at("w") * x).sum();
  };
  const st::Tensor c = st::tensor({0.5, -2.0, 3.0});
  const st::Tensor x = c.unsqueeze(0).expand({4, 3}).contiguous();
  const st::Tensor y = st::zeros({4}, st::kInt64);
  const st::dp::DpSgdOptions options{.noise_multiplier = 0.0, .max_grad_norm = 1e9,
                                     .momentum = 0.5};
  auto optimizer = [&] {
    return st::dp::DpSgd<st::dist::LocalGroup>({}, st::dp::PoissonSampler(4, 1.0, 3), options, 0.1);
  };
  Params p = {{"w", st::tensor({1.0, 2.0, 3.0})}};
  auto first = optimizer();
  for (int i = 0; i < 2; ++i) first.step(loss, p, x, y);
  Params resumed = dist_test::clone(p);
  auto second = optimizer();
  second.set_steps_taken(2);
  std::vector<st::Tensor> buffers;
  for (const st::Tensor& v : first.momentum_buffers()) buffers.push_back(v.clone());
  second.set_momentum_buffers(buffers);
  first.step(loss, p, x, y);
  second.step(loss, resumed, x, y);

  const st::Tensor expected = st::tensor({1.0, 2.0, 3.0}) - c * (0.1 * (1.0 + 1.5 + 1.75));
  EXPECT_LT(dist_test::relative_difference(p.at("w"), expected), 1e-14);
  EXPECT_EQ(resumed.at("w").to_vector<double>(), p.at("w").to_vector<double>());
  EXPECT_LT(dist_test::relative_difference(first.momentum_buffers()[0], c * 1.75), 1e-14);
  for (double bad : {-0.1, 1.0}) {
    EXPECT_NE(dist_test::error_of([&] {
                st::dp::DpSgd<st::dist::LocalGroup>({}, st::dp::PoissonSampler(4, 1.0, 3),
                                                    {.momentum = bad}, 0.1);
              }).find("is not in [0, 1)"),
              std::string::npos);
  }
}

}  // namespace
