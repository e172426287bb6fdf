#include "distributed/dp/poisson_sampling.h"

namespace strata::dp {

Shard shard(int64_t dataset_size, int rank, int world_size) {
  STRATA_CHECK(world_size > 0 && rank >= 0 && rank < world_size, "dp::shard", "rank ", rank,
               " of a group of ", world_size);
  STRATA_CHECK(dataset_size >= 0, "dp::shard", "dataset size ", dataset_size, " is negative");
  return {dataset_size * rank / world_size, dataset_size * (rank + 1) / world_size};
}

PoissonSampler::PoissonSampler(int64_t dataset_size, double sample_rate, uint64_t seed)
    : dataset_size_(dataset_size), sample_rate_(sample_rate), seed_(seed) {
  STRATA_CHECK(dataset_size > 0, "dp::PoissonSampler", "dataset size ", dataset_size,
               " must be positive");
  STRATA_CHECK(sample_rate > 0 && sample_rate <= 1, "dp::PoissonSampler", "sample rate ",
               sample_rate, " is not in (0, 1]");
}

std::vector<int64_t> PoissonSampler::sample(int64_t step, Shard part) const {
  STRATA_CHECK(step >= 0, "dp::PoissonSampler::sample", "step ", step, " is negative");
  STRATA_CHECK(0 <= part.begin && part.begin <= part.end && part.end <= dataset_size_,
               "dp::PoissonSampler::sample", "shard [", part.begin, ", ", part.end,
               ") is not inside a dataset of ", dataset_size_);
  std::vector<int64_t> taken;
  if (part.size() == 0) return taken;
  const Generator gen(seed_);
  gen.set_offset(static_cast<uint64_t>(step) * static_cast<uint64_t>(dataset_size_) +
                 static_cast<uint64_t>(part.begin));
  const std::vector<double> u = rand({part.size()}, gen, kFloat64).to_vector<double>();
  for (int64_t i = 0; i < part.size(); ++i) {
    if (u[static_cast<size_t>(i)] < sample_rate_) taken.push_back(part.begin + i);
  }
  return taken;
}

}  // namespace strata::dp
