#pragma once

#include <cstdint>
#include <vector>

#include "tensor/array_ref.h"
#include "tensor/small_vector.h"

namespace strata {
class Tensor;
class Scalar;
}  // namespace strata

namespace strata::cpu {

// Note [GEMM on strided operands]
// The matrix kernels read an operand in place when its rows or its columns are
// unit-stride runs (row-major, or transposed: column-major) with an outer stride
// that steps over a whole run: it goes to the GEMM (Eigen's, or OpenBLAS's, see
// Note [GEMM through OpenBLAS] in linalg.cpp) as it is, with a transpose flag. Any
// other operand (every other column of a slice, the stride-0 rows of an expanded
// tensor) is first packed into a contiguous buffer. Large products are cut into
// row (or column) blocks of the output run in parallel on TBB, each block an
// independent single-threaded GEMM; a batch of matrices is split over the batch.

// out = beta * out + alpha * (a @ b). a is [n, k], b is [k, m], both of out's dtype
// with any strides; out is contiguous [n, m]. beta == 0 writes out without reading
// it (NaNs in it do not propagate). k == 0 gives beta * out.
void mm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha);
// out[i] = a[i] @ b[i] for a [B, n, k], b [B, k, m] (any strides, stride 0 too);
// out is contiguous [B, n, m].
void bmm_kernel(const Tensor& out, const Tensor& a, const Tensor& b);
// out (0-dim) = sum_i a[i] * b[i] over two 1-D tensors of out's dtype.
void dot_kernel(const Tensor& out, const Tensor& a, const Tensor& b);

// A general einsum as one loop nest: every letter of the equation is a loop
// index; out[output letters] = sum over the other letters of prod_t operand_t.
// The output letters come first, in the output's order; the output is contiguous.
// Operand strides are per letter in elements: 0 where the operand lacks the
// letter, the sum of its strides where it repeats the letter (its diagonal).
struct EinsumLoop {
  DimVector sizes;  // per letter
  int64_t num_output_letters = 0;
  std::vector<DimVector> operand_strides;  // per operand, per letter
};
void einsum_loop_kernel(const Tensor& out, ArrayRef<Tensor> operands, const EinsumLoop& loop);

}  // namespace strata::cpu
