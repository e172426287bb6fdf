#pragma once

// Matrix products on CUDA, with the CPU kernels' contracts (kernels/cpu/linalg.h):
// Float32 and Float64 through cuBLAS (operands read in place when row- or
// column-major, else packed first), Int64 by a plain kernel. Plain C++.

#include "tensor/array_ref.h"

namespace strata {
class Tensor;
class Scalar;
}  // namespace strata

namespace strata::cpu {
struct EinsumLoop;
}  // namespace strata::cpu

namespace strata::gpu {

// out = beta * out + alpha * (a @ b); out contiguous [n, m]; beta == 0 does not read out.
void mm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha);
// out[i] = a[i] @ b[i]; out contiguous [B, n, m].
void bmm_kernel(const Tensor& out, const Tensor& a, const Tensor& b);
// out = the einsum loop nest (cpu::einsum_loop_kernel's contract); Int64, Float32
// and Float64; at most 16 letters and 8 operands.
void einsum_loop_kernel(const Tensor& out, ArrayRef<Tensor> operands, const cpu::EinsumLoop& loop);

}  // namespace strata::gpu
