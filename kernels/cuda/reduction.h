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

}  // namespace strata::gpu
