#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}  // namespace strata

namespace strata::cpu {

// Note [Reduction kernels]
// A reduction is described by the input and a mask of the input dims it folds
// (bit d set: dim d is reduced). `out` is contiguous and holds one value per
// combination of the kept dims, in row-major order; with keepdim the op gives it
// size-1 dims at the reduced places, which does not change that order. Dims of
// size 1 count as reduced or kept alike. See reduction_loops.h for the loops.
using DimMask = uint64_t;
inline constexpr int kMaxReductionRank = 64;

// Float32 sums and means accumulate in double (see Note [Float32 accumulation]).
// Bool and Int64 inputs sum into an Int64 `out`; other outs have self's dtype.
void sum_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
void mean_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
void prod_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
// NaN propagates. The reduced groups must not be empty.
void amax_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
void amin_kernel(const Tensor& out, const Tensor& self, DimMask reduced);

// Max or min with the index of its first occurrence (the first NaN, if any) in the
// row-major order of the reduced dims. `values` may be undefined (argmax).
void max_with_index_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                           DimMask reduced);
void min_with_index_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                           DimMask reduced);

// Stable: the max of each group is subtracted before exponentiating.
void logsumexp_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
// Two passes (mean, then squared deviations); divides by max(0, N - correction).
void var_kernel(const Tensor& out, const Tensor& self, DimMask reduced, int64_t correction,
                bool take_sqrt);
// What a sum-like reduction adds up per value, and what it makes of the total
// (the CPU and CUDA reducers' common vocabulary).
enum class SumKind {
  Sum,              // x
  Mean,             // x, divided by the count
  AbsSum,           // |x|: the 1-norm
  SquareSum,        // x^2, square-rooted: the 2-norm
  CenteredSquares,  // (x - mean)^2, divided by max(0, count - correction): variance
  CenteredExp,      // exp(x - max), log(total) + max: logsumexp
};

enum class NormOrder { L1, L2, Inf };
void norm_kernel(const Tensor& out, const Tensor& self, DimMask reduced, NormOrder order);

}  // namespace strata::cpu
