#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}

namespace strata::cpu {

// 2-D pooling over `planes` independent [in_h, in_w] planes (N * C of an NCHW input).
struct Pool2dGeometry {
  int64_t planes, in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
};

// Tensors are contiguous; outputs preallocated. `indices` (Int64) hold the position
// of each maximum in its plane, ih * in_w + iw; NaN counts as the maximum.
void max_pool2d_kernel(const Tensor& values, const Tensor& indices, const Tensor& input,
                       const Pool2dGeometry& g);
void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& indices, const Pool2dGeometry& g);
// Averages divide by kernel_h * kernel_w, padding included.
void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const Pool2dGeometry& g);
void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Pool2dGeometry& g);

}  // namespace strata::cpu
