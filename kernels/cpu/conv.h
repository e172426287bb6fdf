#pragma once

#include <cstdint>

#include "kernels/cpu/window2d.h"

namespace strata {
class Tensor;
}

namespace strata::cpu {

// The shapes of one 2-D convolution: input [batch, in_channels, in_h, in_w], weight
// [out_channels, in_channels / groups, kernel_h, kernel_w], output [batch,
// out_channels, out_h, out_w].
struct Conv2dGeometry : Window2d {
  int64_t batch, in_channels, out_channels, groups;
};

// Every tensor is contiguous and of one floating dtype; outputs are preallocated.
// `bias` may be null.
void conv2d_forward_kernel(const Tensor& out, const Tensor& input, const Tensor& weight,
                           const Tensor* bias, const Conv2dGeometry& g);
void conv2d_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                  const Tensor& weight, const Conv2dGeometry& g);
void conv2d_backward_weight_kernel(const Tensor& grad_weight, const Tensor& grad_output,
                                   const Tensor& input, const Conv2dGeometry& g);

}  // namespace strata::cpu
