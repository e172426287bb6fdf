#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}

namespace strata::cpu {

// `reduction` is strata::nn::Reduction's value: 0 none, 1 mean, 2 sum.

// input [rows, classes] (contiguous), target [rows] Int64; weight [classes] or null.
// Throws on a target outside [0, classes) that is not ignore_index. `out` is [rows]
// without reduction, else one element; the mean divides by the summed weights of
// the targets not ignored.
void nll_loss_kernel(const Tensor& out, const Tensor& input, const Tensor& target,
                     const Tensor* weight, int64_t reduction, int64_t ignore_index);

// (input - target)^2, elementwise into `out` (the broadcast shape) or summed /
// averaged into a one-element `out`. Inputs have out's dtype, any layout.
void mse_loss_kernel(const Tensor& out, const Tensor& input, const Tensor& target,
                     int64_t reduction);

}  // namespace strata::cpu
