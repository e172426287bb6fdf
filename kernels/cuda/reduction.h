#pragma once

// CUDA reductions with the CPU kernels' contracts (Note [Reduction kernels] in
// kernels/cpu/reduction.h): `out` contiguous, one value per combination of the
// kept dims; `reduced` masks the folded dims. Float32 sums and means accumulate
// in double, as on the CPU. Plain C++: no CUDA header needed.

#include "kernels/cpu/reduction.h"

namespace strata::gpu {

using cpu::DimMask;

void sum_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
void mean_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
void prod_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
// NaN propagates; groups must not be empty.
void amax_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
void amin_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
void max_with_index_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                           DimMask reduced);
void min_with_index_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                           DimMask reduced);
// Accumulated in double, like every floating CUDA sum.
void logsumexp_kernel(const Tensor& out, const Tensor& self, DimMask reduced);
void var_kernel(const Tensor& out, const Tensor& self, DimMask reduced, int64_t correction,
                bool take_sqrt);
void norm_kernel(const Tensor& out, const Tensor& self, DimMask reduced, cpu::NormOrder order);

}  // namespace strata::gpu
