#include "distributed/dp/dp_sgd.h"

#include <algorithm>
#include <cmath>

namespace strata::dp {

double sensitivity(const DpSgdOptions& options) {
  if (options.max_grad_norms.empty()) return options.max_grad_norm;
  double squares = 0;
  for (double c : options.max_grad_norms) squares += c * c;
  return std::sqrt(squares);
}

int64_t auto_physical_batch(int64_t parameter_bytes) {
  constexpr int64_t kChunkBytes = int64_t{6} << 20, kMinimum = 16;
  return std::max(kMinimum, kChunkBytes / std::max<int64_t>(parameter_bytes, 1));
}

void add_noise(const std::vector<Tensor>& leaves, double std, uint64_t seed, int64_t step) {
  STRATA_CHECK(std >= 0 && std::isfinite(std), "dp::add_noise", "noise std ", std,
               " is not a finite non-negative number");
  STRATA_CHECK(step >= 0, "dp::add_noise", "step ", step, " is negative");
  uint64_t per_step = 0;
  for (const Tensor& leaf : leaves) per_step += static_cast<uint64_t>(leaf.numel());
  const Generator gen(seed);
  gen.set_offset(static_cast<uint64_t>(step) * per_step);
  for (const Tensor& leaf : leaves) {
    leaf.add_(randn(leaf.sizes(), gen, leaf.dtype()).to(leaf.device()), std);
  }
}

}  // namespace strata::dp
