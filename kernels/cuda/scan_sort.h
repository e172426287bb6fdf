#pragma once

// cumsum and sort on CUDA, with the CPU kernels' contracts (kernels/cpu/scan_sort.h):
// contiguous tensors seen as lanes. Plain C++: no CUDA header needed.

#include "kernels/cpu/scan_sort.h"

namespace strata::gpu {

// One thread per lane adds in the lane's order, so sums round as on the CPU.
void cumsum_kernel(const Tensor& out, const Tensor& input, cpu::Lanes lanes);
// Stable, NaN last ascending and first descending, as on the CPU (Note [CUDA
// sort] in kernels/cuda/scan_sort.cu).
void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& input,
                 cpu::Lanes lanes, bool descending);

}  // namespace strata::gpu
