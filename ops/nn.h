#pragma once

// Neural-network operators (ops/nn_*.cpp, ops/softmax.cpp), in strata::nn as in
// DESIGN.md. Their backward ops, which only the derivative formulas call, are
// declared in ops/nn_backward.h.

#include <cstdint>
#include <optional>
#include <tuple>

#include "tensor/array_ref.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace strata::nn {

enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };

// input [..., in] @ weight[out, in]^T + bias[out].
Tensor linear(const Tensor& input, const Tensor& weight,
              const std::optional<Tensor>& bias = std::nullopt);

// input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O].
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1},
              int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              int64_t stride, int64_t padding = 0);

// stride defaults to kernel_size.
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, IntArrayRef dilation = {1});
Tensor max_pool2d(const Tensor& input, int64_t kernel_size);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {},
                                                   IntArrayRef padding = {0},
                                                   IntArrayRef dilation = {1});
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0});

Tensor softmax(const Tensor& input, int64_t dim);
Tensor log_softmax(const Tensor& input, int64_t dim);

// input [N, C] log-probabilities, target [N] class indices (Int64).
Tensor nll_loss(const Tensor& input, const Tensor& target,
                const std::optional<Tensor>& weight = std::nullopt,
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     Reduction reduction = Reduction::Mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// Zeroes elements with probability p and scales the rest by 1 / (1 - p).
Tensor dropout(const Tensor& input, double p, bool train, const Generator& gen);
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                  const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);

}  // namespace strata::nn
