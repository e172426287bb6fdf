#pragma once

// The backward ops of the neural-network operators (ops/nn_conv.cpp, ops/nn_pool.cpp,
// ops/softmax.cpp, ops/nn_norm_backward.cpp): registered operators that the
// derivative formulas call, and whose own derivatives make the forward ops
// differentiable any number of times.
// Internal: the public header ops/nn.h declares only the forward ops.

#include <cstdint>
#include <optional>

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

// From the forward op's output.
Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim);
Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim);

}  // namespace strata::nn
