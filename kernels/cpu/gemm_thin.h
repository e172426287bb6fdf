#pragma once

#include <cstdint>

namespace strata::cpu {

// Products whose shape wastes a blocked GEMM's packing (Note [Thin products]):
//   c[i, j] = beta * c[i, j] + alpha * sum_p a[i, p] * b[p, j]
// with a[i, p] = a[i * a_row_stride + p * a_col_stride], likewise b, and
// c[i, j] = c[i * c_row_stride + j]. Runs single-threaded and returns true when
// the shape and layout are one it handles; returns false, touching nothing,
// otherwise. Defined for float and double.
template <class T>
bool thin_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_row_stride,
               int64_t a_col_stride, const T* b, int64_t b_row_stride, int64_t b_col_stride, T beta,
               T* c, int64_t c_row_stride);

}  // namespace strata::cpu
