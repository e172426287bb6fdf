#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}  // namespace strata

namespace strata::cpu {

// Where a random op draws from: element i of its (contiguous, row-major) output
// uses Philox counter `offset + i` under key `seed` (tensor/philox.h).
struct PhiloxStream {
  uint64_t seed;
  uint64_t offset;
};

// `out` is contiguous in every kernel below; its dtype is floating except for randint.
void uniform_kernel(const Tensor& out, PhiloxStream stream);          // [0, 1)
void standard_normal_kernel(const Tensor& out, PhiloxStream stream);  // N(0, 1)
// Uniform integers in [low, high), converted to out's dtype (Int64 or floating).
void randint_kernel(const Tensor& out, int64_t low, int64_t high, PhiloxStream stream);
// 1 where uniform < p, else 0; p broadcasts to out and has out's dtype.
void bernoulli_kernel(const Tensor& out, const Tensor& p, PhiloxStream stream);
// mean + std * N(0, 1); mean and std broadcast to out and have out's dtype.
void normal_kernel(const Tensor& out, const Tensor& mean, const Tensor& std, PhiloxStream stream);

// True when every value of the floating tensor t lies in [low, high] (NaN never does).
bool all_within(const Tensor& t, double low, double high);

}  // namespace strata::cpu
