#pragma once

#include <cstdint>

#include "kernels/cpu/window2d.h"

namespace strata {
class Tensor;
}

namespace strata::cpu {

// 2-D pooling over `planes` independent [in_h, in_w] planes (N * C of an NCHW input).
struct Pool2dGeometry : Window2d {
  int64_t planes;  // N * C: the planes pooled independently
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
