#pragma once

// Integer power shared by the CPU and CUDA kernels, so both backends give Int64
// pow the same wrapping and truncation.

#include <cstdint>

#if defined(__CUDACC__)
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

namespace strata {

// base^exponent in integer arithmetic, wrapping on overflow. A negative exponent
// truncates 1 / base^|exponent| like integer division: 0 unless base is 1 or -1.
STRATA_HOST_DEVICE inline int64_t int_pow(int64_t base, int64_t exponent) {
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

}  // namespace strata
