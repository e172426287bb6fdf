#pragma once

// Device math shared by the .cu files.

#include <cstdint>

namespace strata::gpu {

// base^exponent wrapping on overflow; a negative exponent truncates like integer
// division (kernels/cpu/elementwise_rows.h's int_pow).
__device__ inline int64_t int_pow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return exponent % 2 == 0 ? 1 : -1;
    return 0;
  }
  uint64_t result = 1;
  uint64_t factor = static_cast<uint64_t>(base);
  for (; exponent != 0; exponent >>= 1) {
    if (exponent & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<int64_t>(result);
}

}  // namespace strata::gpu
