// 2-D max and average pooling on CUDA (kernels/cuda/nn.h): one thread per output
// element walks its window's pixels that lie in the image. The backward kernels
// zero grad_input and let each output add its gradient to its window's pixels
// (atomics: windows of a stride below the kernel size overlap).
#include <cstdint>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/runtime.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

using cpu::Pool2dGeometry;

// Output element o (plane-major) and the first pixel of its window, row-major.
struct Window {
  int64_t plane, h_start, w_start;
  __device__ Window(const Pool2dGeometry& g, int64_t o)
      : plane(o / (g.out_h * g.out_w)),
        h_start((o / g.out_w) % g.out_h * g.stride_h - g.pad_h),
        w_start(o % g.out_w * g.stride_w - g.pad_w) {}
};

// Calls fn(pixel of the plane) for each pixel of the window inside the image.
template <class Fn>
__device__ void for_each_pixel(const Pool2dGeometry& g, const Window& w, Fn&& fn) {
  for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
    const int64_t ih = w.h_start + kh * g.dilation_h;
    if (ih < 0 || ih >= g.in_h) continue;
    for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
      const int64_t iw = w.w_start + kw * g.dilation_w;
      if (iw >= 0 && iw < g.in_w) fn(ih * g.in_w + iw);
    }
  }
}

// As on the CPU: NaN beats everything (the last NaN wins); of equal values the
// first (row-major) stays.
template <class T>
__global__ void max_pool(T* values, int64_t* indices, const T* input, Pool2dGeometry g, int64_t n) {
  STRATA_GRID_LOOP(o, n) {
    const Window w(g, o);
    const T* plane = input + w.plane * g.in_h * g.in_w;
    int64_t best_pixel = -1;
    T best = 0;
    for_each_pixel(g, w, [&](int64_t pixel) {
      const T x = plane[pixel];
      if (best_pixel < 0 || x > best || x != x) {
        best = x;
        best_pixel = pixel;
      }
    });
    values[o] = best;
    indices[o] = best_pixel;
  }
}

template <class T>
__global__ void max_pool_backward(T* grad_input, const T* grad_output, const int64_t* indices,
                                  int64_t plane_size, int64_t out_plane, int64_t n) {
  STRATA_GRID_LOOP(o, n) {
    atomicAdd(grad_input + (o / out_plane) * plane_size + indices[o], grad_output[o]);
  }
}

// Averages divide by the kernel's area, padding included (the CPU's convention).
template <class T>
__global__ void avg_pool(T* out, const T* input, Pool2dGeometry g, int64_t n) {
  const T area = static_cast<T>(g.kernel_h * g.kernel_w);
  STRATA_GRID_LOOP(o, n) {
    const Window w(g, o);
    const T* plane = input + w.plane * g.in_h * g.in_w;
    T sum = 0;
    for_each_pixel(g, w, [&](int64_t pixel) { sum += plane[pixel]; });
    out[o] = sum / area;
  }
}

template <class T>
__global__ void avg_pool_backward(T* grad_input, const T* grad_output, Pool2dGeometry g,
                                  int64_t n) {
  const T area = static_cast<T>(g.kernel_h * g.kernel_w);
  STRATA_GRID_LOOP(o, n) {
    const Window w(g, o);
    T* plane = grad_input + w.plane * g.in_h * g.in_w;
    const T share = grad_output[o] / area;
    for_each_pixel(g, w, [&](int64_t pixel) { atomicAdd(plane + pixel, share); });
  }
}

// Zeroes a gradient for the backward kernels to add into.
void zero(const Tensor& t, const char* op) {
  DeviceGuard guard(t.device());
  STRATA_CUDA_CHECK(cudaMemsetAsync(t.impl()->data_ptr(), 0,
                                    static_cast<size_t>(t.numel()) * element_size(t.dtype()),
                                    stream_for(t.device())),
                    op);
}

// A backward pass: grad_input zeroed, then body(T{}, grid, stream) launches one
// thread per element of grad_output to add into it.
template <class Body>
void launch_backward(const char* op, const Tensor& grad_input, const Tensor& grad_output,
                     Body&& body) {
  check_same_device(op, grad_input.device(), grad_output.device());
  if (grad_input.numel() == 0) return;
  zero(grad_input, op);
  launch_elements<float, double>(op, grad_input, grad_input.dtype(), grad_output.numel(), body);
}

}  // namespace

void max_pool2d_kernel(const Tensor& values, const Tensor& indices, const Tensor& input,
                       const Pool2dGeometry& g) {
  constexpr const char* op = "strata::max_pool2d_with_indices";
  check_same_device(op, values.device(), input.device());
  const int64_t n = values.numel();
  launch_elements<float, double>(op, values, values.dtype(), n, [&](auto tag, int grid,
                                                                    cudaStream_t stream) {
    using T = decltype(tag);
    max_pool<T><<<grid, kBlock, 0, stream>>>(data_of<T>(values), data_of<int64_t>(indices),
                                             data_of<T>(input), g, n);
  });
}

void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& indices, const Pool2dGeometry& g) {
  constexpr const char* op = "strata::max_pool2d_backward";
  check_same_device(op, grad_input.device(), indices.device());
  launch_backward(op, grad_input, grad_output, [&](auto tag, int grid, cudaStream_t stream) {
    using T = decltype(tag);
    max_pool_backward<T><<<grid, kBlock, 0, stream>>>(
        data_of<T>(grad_input), data_of<T>(grad_output), data_of<int64_t>(indices),
        g.in_h * g.in_w, g.out_h * g.out_w, grad_output.numel());
  });
}

void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const Pool2dGeometry& g) {
  constexpr const char* op = "strata::avg_pool2d";
  check_same_device(op, out.device(), input.device());
  const int64_t n = out.numel();
  launch_elements<float, double>(op, out, out.dtype(), n, [&](auto tag, int grid,
                                                              cudaStream_t stream) {
    using T = decltype(tag);
    avg_pool<T><<<grid, kBlock, 0, stream>>>(data_of<T>(out), data_of<T>(input), g, n);
  });
}

void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Pool2dGeometry& g) {
  constexpr const char* op = "strata::avg_pool2d_backward";
  launch_backward(op, grad_input, grad_output, [&](auto tag, int grid, cudaStream_t stream) {
    using T = decltype(tag);
    avg_pool_backward<T><<<grid, kBlock, 0, stream>>>(data_of<T>(grad_input),
                                                      data_of<T>(grad_output), g,
                                                      grad_output.numel());
  });
}

}  // namespace strata::gpu
