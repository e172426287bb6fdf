#pragma once

// The backward ops of the neural-network operators (ops/nn_conv.cpp, ops/nn_pool.cpp,
// ops/softmax.cpp, ops/nn_norm_backward.cpp, ops/nn_group_norm.cpp): registered operators that the
// derivative formulas call, and whose own derivatives make the forward ops
// differentiable any number of times.
// Internal: the public header ops/nn.h declares only the forward ops.

#include <cstdint>
#include <optional>
#include <tuple>

#include "tensor/array_ref.h"
#include "tensor/tensor.h"

namespace strata::nn {

// The adjoints of conv2d in its input and in its weight.
Tensor conv2d_backward_input(const Tensor& grad_output, IntArrayRef input_sizes,
                             const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                             IntArrayRef dilation, int64_t groups);
Tensor conv2d_backward_weight(const Tensor& grad_output, const Tensor& input,
                              IntArrayRef weight_sizes, IntArrayRef stride, IntArrayRef padding,
                              IntArrayRef dilation, int64_t groups);

// Each output gradient goes to the input pixel its index names.
Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& indices);
Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding);

// The gradient of layer_norm in its input (ops/nn_norm_backward.cpp): the
// normalisation's Jacobian over the trailing normalized_shape dims applied to
// grad_output * weight (weight optional).
Tensor layer_norm_backward(const Tensor& grad_output, const Tensor& input,
                           IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                           double eps);

// layer_norm_backward(h, input, normalized_shape) without a weight is linear in h;
// these are its derivatives in the input (over the last normalized_dims dims), in
// ordinary ops: the vector-Jacobian product with a cotangent u and the
// Jacobian-vector product with a tangent t. The derivative formulas of
// layer_norm_backward and group_norm_backward share them.
Tensor layer_norm_backward_input_vjp(const Tensor& u, const Tensor& h, const Tensor& input,
                                     size_t normalized_dims, double eps);
Tensor layer_norm_backward_input_jvp(const Tensor& t, const Tensor& h, const Tensor& input,
                                     size_t normalized_dims, double eps);

// The gradient of group_norm (ops/nn_group_norm.cpp) given grad_output: the input's
// gradient, and per sample and channel ([N, C]) the sums over positions of
// grad_output * x^ and of grad_output, whose sums over N are the weight's and the
// bias's gradients (weight optional: ones).
std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& grad_output,
                                                       const Tensor& input, int64_t num_groups,
                                                       const std::optional<Tensor>& weight,
                                                       double eps);

// From the forward op's output.
Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim);
Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim);

}  // namespace strata::nn
