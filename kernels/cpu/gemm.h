#pragma once

#include <cstdint>

namespace strata::cpu {

// One product (mm, linear) is split only into tasks of at least this many
// multiply-adds: cut in two, each half repacks the shared operand and narrows the
// blocks, and waking the other thread costs microseconds, which smaller tasks do
// not earn back. The MLP's products at batch 32 (3.2M multiply-adds) take the thin
// route (Note [Thin products]), which repacks little or nothing, so their halves pay.
inline constexpr int64_t kGemmSplitMacs = int64_t{1} << 20;

// One single-threaded product on raw memory, for kernels that call GEMM on
// pieces of their own buffers (conv2d's im2col columns):
//   c[i, j] = beta * c[i, j] + alpha * sum_p a[i, p] * b[p, j]
// for i < m, j < n, p < k, where a[i, p] = a[i * a_row_stride + p * a_col_stride],
// likewise b, and c[i, j] = c[i * c_row_stride + j]. Each operand must be row- or
// column-major (one of its strides 1). beta == 0 writes c without reading it.
// Runs through the same GEMM as mm (OpenBLAS when found, else Eigen; see Note
// [GEMM through OpenBLAS] in linalg.cpp). Defined for float and double.
template <class T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_row_stride,
          int64_t a_col_stride, const T* b, int64_t b_row_stride, int64_t b_col_stride, T beta,
          T* c, int64_t c_row_stride);

// The same product when its shape wastes a blocked GEMM's packing (Note [Thin
// products], gemm_thin.cpp): returns true when it ran it (single-threaded), false,
// touching nothing, when the shape and layout are not one it handles. gemm takes
// this route itself; callers need not ask.
template <class T>
bool thin_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_row_stride,
               int64_t a_col_stride, const T* b, int64_t b_row_stride, int64_t b_col_stride, T beta,
               T* c, int64_t c_row_stride);

}  // namespace strata::cpu
