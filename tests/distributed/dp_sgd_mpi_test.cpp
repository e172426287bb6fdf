// DP-SGD across ranks under mpirun (1, 2 or 3 ranks): the parameters after k
// steps equal one process's over the union batch (the sampling, clipping, one
// noise draw and scaling are right), whatever W, with empty local batches, and
// the noise has the spread of one draw.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>

#include "tests/distributed/dist_test_support.h"

namespace st = strata;
using dist_test::Params;

namespace {

st::dist::Group world() {
  static const st::dist::Group group = st::dist::init();
  return group;
}

struct Problem {
  int64_t dataset_size = 40;
  double sample_rate = 0.3;
  int steps = 5;
  double learning_rate = 0.2;
  st::ScalarType dtype = st::kFloat64;
  bool ghost = false;  // ghost clipping instead of vmap(grad) per-sample gradients
  st::dp::DpSgdOptions options{.noise_multiplier = 1.0, .max_grad_norm = 0.4, .noise_seed = 77};
};

struct Trained {
  Params params;
  int64_t samples_seen = 0;  // this rank's, over all steps
};

// The same problem on any group: every rank builds the whole dataset and passes
// its shard's rows.
template <class Group>
Trained train(const Group& group, const Problem& problem) {
  st::Generator gen(1);
  const st::Tensor x = st::randn({problem.dataset_size, 5}, gen, problem.dtype);
  const st::Tensor y = st::randint(0, 3, {problem.dataset_size}, gen);
  Trained out{dist_test::mlp_params(5, 7, 3, problem.dtype, 2), 0};
  st::dp::DpSgd<Group> optimizer(group, st::dp::PoissonSampler(problem.dataset_size,
                                                               problem.sample_rate, 5),
                                 problem.options, problem.learning_rate);
  const st::dp::Shard s = optimizer.shard();
  const st::Tensor x_shard = x.narrow(0, s.begin, s.size());
  const st::Tensor y_shard = y.narrow(0, s.begin, s.size());
  for (int step = 0; step < problem.steps; ++step) {
    out.samples_seen +=
        problem.ghost
            ? optimizer.step(st::dp::ghost(&dist_test::mlp_ghost_loss), out.params, x_shard,
                             y_shard)
            : optimizer.step(dist_test::mlp_sample_loss, out.params, x_shard, y_shard);
  }
  return out;
}

void expect_matches_one_process(const Problem& problem, double tolerance) {
  const Trained distributed = train(world(), problem);
  const Trained alone = train(st::dist::LocalGroup{}, problem);
  EXPECT_LE(dist_test::max_relative_difference(distributed.params, alone.params), tolerance);
  // Every rank holds the same parameters: rank 0's, broadcast, are bit-equal.
  Params root = dist_test::clone(distributed.params);
  world().broadcast(root, 0);
  for (const auto& [name, t] : root) {
    EXPECT_EQ(t.to_vector<double>(), distributed.params.at(name).to_vector<double>()) << name;
  }
  // The local batches add up to the union batch.
  st::Tensor seen = st::full({}, distributed.samples_seen, st::kInt64);
  world().all_reduce(seen);
  EXPECT_EQ(seen.item<int64_t>(), alone.samples_seen);
  // And training moved them: the test compares something.
  EXPECT_GT(dist_test::max_relative_difference(alone.params,
                                               dist_test::mlp_params(5, 7, 3, problem.dtype, 2)),
            1e-3);
}

TEST(DistributedDpSgd, FlatClippingMatchesOneProcessOverTheUnionBatch) {
  expect_matches_one_process(Problem{}, 1e-6);
}

TEST(DistributedDpSgd, PerLayerClippingMatchesOneProcessOverTheUnionBatch) {
  Problem problem;
  problem.options.max_grad_norms = {0.2, 0.1, 0.3, 0.1};  // b1, b2, w1, w2 (map order)
  expect_matches_one_process(problem, 1e-6);
}

TEST(DistributedDpSgd, Float32MatchesOneProcessOverTheUnionBatch) {
  Problem problem;
  problem.dtype = st::kFloat32;
  expect_matches_one_process(problem, 1e-6);
}

TEST(DistributedDpSgd, SmallPhysicalBatchesMatchOneProcess) {
  Problem problem;
  problem.options.physical_batch = 2;
  expect_matches_one_process(problem, 1e-6);
}

// Ghost clipping over W ranks against one process on the per-sample route:
// flat, per layer, and with empty local batches.
TEST(DistributedDpSgd, GhostClippingMatchesOneProcessOnThePerSampleRoute) {
  Problem reference;
  for (int variant = 0; variant < 3; ++variant) {
    if (variant == 1) reference.options.max_grad_norms = {0.2, 0.1, 0.3, 0.1};
    if (variant == 2) {
      reference.dataset_size = 2;
      reference.sample_rate = 0.5;
      reference.steps = 8;
    }
    Problem ghost = reference;
    ghost.ghost = true;
    const Trained distributed = train(world(), ghost);
    const Trained alone = train(st::dist::LocalGroup{}, reference);
    EXPECT_LE(dist_test::max_relative_difference(distributed.params, alone.params), 1e-6)
        << "variant " << variant;
  }
}

// Two samples over W ranks: with 3 ranks rank 0 holds none, with 2 each holds
// one and is often left out at q = 0.5. Those ranks still join every collective
// (no hang) and the divisor stays q N.
TEST(DistributedDpSgd, EmptyLocalBatchesStillJoinAndKeepTheDenominator) {
  Problem problem;
  problem.dataset_size = 2;
  problem.sample_rate = 0.5;
  problem.steps = 8;
  expect_matches_one_process(problem, 1e-6);
  problem.options.noise_multiplier = 0.0;
  expect_matches_one_process(problem, 1e-6);
}

// With zero gradients the update is only noise: lr sigma C / (q N) per element
// if it is drawn once per step, sqrt(W) times that if each rank drew its own.
// The sample std s of n = 20000 normal draws has relative standard error
// 1 / sqrt(2 n) = 0.5%; the bound of 5% is 10 standard errors (a false failure
// rate below 1e-20) and far below the sqrt(2) - 1 = 41% of two draws.
TEST(DistributedDpSgd, NoiseIsDrawnOncePerStepWhateverTheRanks) {
  const int64_t n = 20000, dataset = 100;
  const double q = 0.1, sigma = 1.3, clip = 0.7, lr = 1.0;
  Params params = {{"w", st::zeros({n}, st::kFloat64)}};
  auto zero_gradient_loss = [](const Params& p, const st::Tensor& x, const st::Tensor&) {
    return (p.at("w") * 0.0).sum() + (x * 0.0).sum();
  };
  st::dp::DpSgd<st::dist::Group> optimizer(
      world(), st::dp::PoissonSampler(dataset, q, 3),
      {.noise_multiplier = sigma, .max_grad_norm = clip, .noise_seed = 4}, lr);
  const st::dp::Shard s = optimizer.shard();
  const st::Tensor x = st::ones({s.size(), 2}, st::kFloat64);
  const st::Tensor y = st::zeros({s.size()}, st::kInt64);
  optimizer.step(zero_gradient_loss, params, x, y);
  const double expected = lr * sigma * clip / (q * dataset);
  const st::Tensor w = params.at("w");
  const double spread = w.std().item<double>();
  EXPECT_NEAR(spread / expected, 1.0, 0.05) << "std " << spread << ", one draw " << expected;
  EXPECT_LT(std::abs(w.mean().item<double>()), 6 * expected / std::sqrt(double(n)));
}

}  // namespace
