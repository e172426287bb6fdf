// Matrix products on CUDA (kernels/cuda/linalg.h).
//
// Note [cuBLAS on row-major tensors]
// cuBLAS is column-major. A row-major [n, m] result is the column-major [m, n]
// matrix out^T = b^T a^T, so the call passes b before a: a row-major operand is
// then read as it is (CUBLAS_OP_N, leading dim its row stride), a column-major
// one (a transposed view) with CUBLAS_OP_T; anything else is packed into a
// contiguous copy first. One handle per device, bound to the device's stream.
#include <array>
#include <mutex>

#include "kernels/cuda/cublas_library.h"
#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/linalg.h"
#include "kernels/cuda/runtime.h"
#include "tensor/scalar.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

void check_blas(cublasStatus_t status, const char* op, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  STRATA_FAIL(op, what, " failed: ", cublas().status_string(status));
}

cublasHandle_t handle_for(Device device) {
  static std::array<cublasHandle_t, 64> handles{};
  static std::array<std::once_flag, 64> created;
  std::call_once(created[device.index], [&] {
    DeviceGuard guard(device);
    check_blas(cublas().create(&handles[device.index]), "cublas", "cublasCreate");
    check_blas(cublas().set_stream(handles[device.index], stream_for(device)), "cublas",
               "cublasSetStream");
  });
  return handles[device.index];
}

// A matrix operand as cuBLAS reads it (in the transposed formulation above).
struct Operand {
  Tensor storage;  // keeps a packed copy alive
  const void* data;
  cublasOperation_t op;
  int64_t ld;
  int64_t batch_stride;
};

// m: the last two dims [rows, cols] of t (batch dim first when batched).
Operand as_operand(const Tensor& t, const char* op) {
  const int64_t r = t.dim() - 2;
  const int64_t rows = t.sizes()[r], cols = t.sizes()[r + 1];
  const int64_t s0 = t.strides()[r], s1 = t.strides()[r + 1];
  const int64_t batch_stride = t.dim() == 3 ? t.strides()[0] : 0;
  const int64_t row_ld = cols > 1 ? cols : 1;
  const int64_t col_ld = rows > 1 ? rows : 1;
  if ((s1 == 1 || cols == 1) && (rows == 1 || s0 >= row_ld)) {
    return {t, t.impl()->data_ptr(), CUBLAS_OP_N, rows == 1 ? row_ld : s0, batch_stride};
  }
  if ((s0 == 1 || rows == 1) && (cols == 1 || s1 >= col_ld)) {
    return {t, t.impl()->data_ptr(), CUBLAS_OP_T, cols == 1 ? col_ld : s1, batch_stride};
  }
  Tensor packed = make_empty_tensor(t.sizes(), t.dtype(), t.device(), op);
  copy_on_device(packed, t);
  return {packed, packed.impl()->data_ptr(), CUBLAS_OP_N, row_ld, t.dim() == 3 ? rows * cols : 0};
}

template <class T>
__global__ void int_mm_kernel(int64_t batch, int64_t n, int64_t m, int64_t k, const T* a,
                              int64_t as0, int64_t as1, int64_t as2, const T* b, int64_t bs0,
                              int64_t bs1, int64_t bs2, T* out, T alpha, T beta) {
  const int64_t total = batch * n * m;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = idx % m, i = (idx / m) % n, p = idx / (n * m);
    T acc = 0;
    for (int64_t q = 0; q < k; ++q)
      acc += a[p * as0 + i * as1 + q * as2] * b[p * bs0 + q * bs1 + j * bs2];
    out[idx] = beta == T(0) ? alpha * acc : beta * out[idx] + alpha * acc;
  }
}

void int_product(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, int64_t alpha,
                 int64_t beta) {
  const bool batched = a.dim() == 3;
  const int64_t batch = batched ? a.sizes()[0] : 1;
  const int64_t n = a.sizes()[a.dim() - 2], k = a.sizes()[a.dim() - 1], m = b.sizes()[b.dim() - 1];
  auto st = [](const Tensor& t, int d) {
    return t.dim() == 3 ? t.strides()[d] : d == 0 ? 0 : t.strides()[d - 1];
  };
  const int64_t total = batch * n * m;
  if (total == 0) return;
  const int blocks = static_cast<int>((total + 255) / 256 < 65535 ? (total + 255) / 256 : 65535);
  int_mm_kernel<int64_t><<<blocks, 256, 0, stream_for(out.device())>>>(
      batch, n, m, k, static_cast<const int64_t*>(a.impl()->data_ptr()), st(a, 0), st(a, 1),
      st(a, 2), static_cast<const int64_t*>(b.impl()->data_ptr()), st(b, 0), st(b, 1), st(b, 2),
      static_cast<int64_t*>(out.impl()->data_ptr()), alpha, beta);
  check_launch(op);
}

template <class T>
void gemm(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, T alpha, T beta) {
  const bool batched = a.dim() == 3;
  const int64_t batch = batched ? a.sizes()[0] : 1;
  const int64_t n = a.sizes()[a.dim() - 2], k = a.sizes()[a.dim() - 1], m = b.sizes()[b.dim() - 1];
  if (n == 0 || m == 0 || batch == 0) return;
  const Operand left = as_operand(b, op);   // b^T: [m, k]
  const Operand right = as_operand(a, op);  // a^T: [k, n]
  cublasHandle_t handle = handle_for(out.device());
  T* c = static_cast<T*>(out.impl()->data_ptr());
  const auto* x = static_cast<const T*>(left.data);
  const auto* y = static_cast<const T*>(right.data);
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ldx = static_cast<int>(left.ld), ldy = static_cast<int>(right.ld), ldc = im;
  const CublasLibrary& lib = cublas();
  cublasStatus_t status;
  if constexpr (std::is_same_v<T, float>) {
    status = batched ? lib.sgemm_strided_batched(handle, left.op, right.op, im, in, ik, &alpha, x,
                                                 ldx, left.batch_stride, y, ldy, right.batch_stride,
                                                 &beta, c, ldc, n * m, static_cast<int>(batch))
                     : lib.sgemm(handle, left.op, right.op, im, in, ik, &alpha, x, ldx, y, ldy,
                                 &beta, c, ldc);
  } else {
    status = batched ? lib.dgemm_strided_batched(handle, left.op, right.op, im, in, ik, &alpha, x,
                                                 ldx, left.batch_stride, y, ldy, right.batch_stride,
                                                 &beta, c, ldc, n * m, static_cast<int>(batch))
                     : lib.dgemm(handle, left.op, right.op, im, in, ik, &alpha, x, ldx, y, ldy,
                                 &beta, c, ldc);
  }
  check_blas(status, op, "cuBLAS gemm");
}

void product(const char* op, const Tensor& out, const Tensor& a, const Tensor& b,
             const Scalar& beta, const Scalar& alpha) {
  check_same_device(op, out.device(), a.device());
  check_same_device(op, out.device(), b.device());
  DeviceGuard guard(out.device());
  dispatch_among<int64_t, float, double>(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int64_t>) {
      int_product(op, out, a, b, alpha.to<int64_t>(), beta.to<int64_t>());
    } else {
      gemm<T>(op, out, a, b, alpha.to<T>(), beta.to<T>());
    }
  });
}

}  // namespace

void mm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha) {
  product("strata::mm", out, a, b, beta, alpha);
}

void bmm_kernel(const Tensor& out, const Tensor& a, const Tensor& b) {
  product("strata::bmm", out, a, b, 0, 1);
}

}  // namespace strata::gpu
