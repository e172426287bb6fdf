#pragma once

// Matrix products on CUDA, with the CPU kernels' contracts (kernels/cpu/linalg.h):
// Float32 and Float64 through cuBLAS (operands read in place when row- or
// column-major, else packed first), Int64 by a plain kernel. Plain C++.

namespace strata {
class Tensor;
class Scalar;
}  // namespace strata

namespace strata::gpu {

// out = beta * out + alpha * (a @ b); out contiguous [n, m]; beta == 0 does not read out.
void mm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha);
// out[i] = a[i] @ b[i]; out contiguous [B, n, m].
void bmm_kernel(const Tensor& out, const Tensor& a, const Tensor& b);

}  // namespace strata::gpu
