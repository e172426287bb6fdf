#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}

namespace strata::cpu {

// The layout group_norm's kernels read: an input [N, C, P...] seen as N * groups
// rows, row (n, g) holding channels g * C / groups ... (g + 1) * C / groups - 1 of
// sample n at every one of `positions` positions, next to each other.
struct GroupNormGeometry {
  int64_t batch;      // N
  int64_t channels;   // C
  int64_t groups;     // divides C
  int64_t positions;  // P, the product of the sizes after C
  double eps;
};

// out = (x - mean) / sqrt(var + eps) * weight[c] + bias[c], the statistics of each
// row (biased variance); weight, bias [C] or null. Tensors contiguous, one
// floating dtype.
void group_norm_kernel(const Tensor& out, const Tensor& input, const Tensor* weight,
                       const Tensor* bias, const GroupNormGeometry& g);

// The gradient of group_norm given grad_output, in one pass per row over cached
// values: grad_input (the input's shape), and per sample and channel [N, C]
// grad_weight = sum over positions of grad_output * x^ and grad_bias = the sum of
// grad_output (their sum over N is the weight's and bias's gradient). The row's
// statistics are recomputed from the input. weight [C] or null (ones).
void group_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight,
                                const Tensor& grad_bias, const Tensor& grad_output,
                                const Tensor& input, const Tensor* weight,
                                const GroupNormGeometry& g);

}  // namespace strata::cpu
