#pragma once

// Poisson sampling for DP-SGD, split over ranks: see Note [Poisson sampling
// across ranks].

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <vector>

namespace strata::dp {

// The block of dataset indices [begin, end) that rank `rank` of `world_size`
// holds: [rank N / W, (rank + 1) N / W). Blocks may be empty when N < W.
struct Shard {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};
Shard shard(int64_t dataset_size, int rank, int world_size);

// Note [Poisson sampling across ranks]
// DP-SGD's privacy analysis assumes each step takes every sample independently
// with probability q (so the batch size itself is random). Here sample i joins
// step t's batch when the uniform number at counter t N + i of the seed's
// Philox stream is below q (Note [Counter-based random numbers]): a pure
// function of (seed, t, i). Every rank can therefore draw exactly its own
// shard's decisions, with no communication, and the union over the ranks is the
// batch one process would draw for the whole dataset with the same seed: the
// same for any number of ranks, and reproducible from the step number alone
// (a resumed run needs no generator state).
class PoissonSampler {
 public:
  PoissonSampler(int64_t dataset_size, double sample_rate, uint64_t seed);

  // The indices of `part` (global, ascending) that step `step` takes; may be empty.
  std::vector<int64_t> sample(int64_t step, Shard part) const;
  std::vector<int64_t> sample(int64_t step) const { return sample(step, {0, dataset_size_}); }

  int64_t dataset_size() const { return dataset_size_; }
  double sample_rate() const { return sample_rate_; }
  uint64_t seed() const { return seed_; }
  // q N: the divisor of the noisy gradient sum.
  double expected_batch_size() const { return sample_rate_ * static_cast<double>(dataset_size_); }

 private:
  int64_t dataset_size_;
  double sample_rate_;
  uint64_t seed_;
};

}  // namespace strata::dp
