// softmax and log_softmax on CUDA (kernels/cuda/softmax.h). One thread per lane
// (an (outer, inner) pair) walks its dim_size values: max, sum of exponentials,
// write, as the CPU kernel does, so the two round alike. Lanes of one warp are
// adjacent in memory when inner > 1; when inner == 1 each lane is a contiguous row.
#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/softmax.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

template <class T>
__global__ void softmax_lanes(const T* in, T* out, int64_t outer, int64_t dim, int64_t inner,
                              bool take_log) {
  const int64_t lanes = outer * inner;
  for (int64_t lane = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; lane < lanes;
       lane += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t base = (lane / inner) * dim * inner + lane % inner;
    T m = -__builtin_huge_val();
    for (int64_t d = 0; d < dim; ++d) {
      const T x = in[base + d * inner];
      m = (x > m || x != x) ? x : m;
    }
    T sum = 0;
    for (int64_t d = 0; d < dim; ++d) sum += exp(in[base + d * inner] - m);
    const T log_sum = ::log(sum);
    for (int64_t d = 0; d < dim; ++d) {
      const T shifted = in[base + d * inner] - m;
      out[base + d * inner] = take_log ? shifted - log_sum : exp(shifted) / sum;
    }
  }
}

// softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g).
template <class T>
__global__ void softmax_backward_lanes(const T* g, const T* y, T* out, int64_t outer, int64_t dim,
                                       int64_t inner, bool take_log) {
  const int64_t lanes = outer * inner;
  for (int64_t lane = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; lane < lanes;
       lane += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t base = (lane / inner) * dim * inner + lane % inner;
    T sum = 0;
    for (int64_t d = 0; d < dim; ++d) {
      const int64_t i = base + d * inner;
      sum += take_log ? g[i] : g[i] * y[i];
    }
    for (int64_t d = 0; d < dim; ++d) {
      const int64_t i = base + d * inner;
      out[i] = take_log ? g[i] - exp(y[i]) * sum : y[i] * (g[i] - sum);
    }
  }
}

int blocks_for(int64_t lanes) {
  const int64_t blocks = (lanes + 255) / 256;
  return static_cast<int>(blocks < 1 ? 1 : blocks < 65535 ? blocks : 65535);
}

}  // namespace

void softmax_kernel(const Tensor& out, const Tensor& input, cpu::SoftmaxShape s, bool take_log) {
  const char* op = take_log ? "strata::log_softmax" : "strata::softmax";
  check_same_device(op, out.device(), input.device());
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    softmax_lanes<T><<<blocks_for(s.outer * s.inner), 256, 0, stream_for(out.device())>>>(
        static_cast<const T*>(input.impl()->data_ptr()), static_cast<T*>(out.impl()->data_ptr()),
        s.outer, s.dim_size, s.inner, take_log);
  });
  check_launch(op);
}

void softmax_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                             const Tensor& output, cpu::SoftmaxShape s, bool take_log) {
  const char* op = take_log ? "strata::log_softmax_backward" : "strata::softmax_backward";
  check_same_device(op, grad_input.device(), grad_output.device());
  check_same_device(op, grad_input.device(), output.device());
  if (grad_input.numel() == 0) return;
  DeviceGuard guard(grad_input.device());
  dispatch_floating(grad_input.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_lanes<T>
        <<<blocks_for(s.outer * s.inner), 256, 0, stream_for(grad_input.device())>>>(
            static_cast<const T*>(grad_output.impl()->data_ptr()),
            static_cast<const T*>(output.impl()->data_ptr()),
            static_cast<T*>(grad_input.impl()->data_ptr()), s.outer, s.dim_size, s.inner, take_log);
  });
  check_launch(op);
}

}  // namespace strata::gpu
