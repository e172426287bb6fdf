#pragma once

// Neural-network operators (ops/nn_*.cpp, ops/softmax.cpp), in strata::nn as in
// DESIGN.md. Their backward ops, which only the derivative formulas call, are
// declared in ops/nn_backward.h.

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>

#include "tensor/array_ref.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace strata::nn {

enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };

// x * Phi(x) (approximate "none"), or its "tanh" approximation; x * sigmoid(x)
// (ops/elementwise_unary.cpp).
Tensor gelu(const Tensor& input, std::string_view approximate = "none");
Tensor silu(const Tensor& input);

// input [..., in] @ weight[out, in]^T + bias[out].
Tensor linear(const Tensor& input, const Tensor& weight,
              const std::optional<Tensor>& bias = std::nullopt);

// input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O].
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1},
              int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              int64_t stride, int64_t padding = 0);

// input [N, C, L], weight [O, C / groups, k], bias [O] (ops/nn_norm_attention.cpp:
// conv2d over a height of 1).
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1},
              int64_t groups = 1);
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
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

// ops/nn_norm_attention.cpp. input [N, C, *]: each sample's channels in
// num_groups groups, each normalised over its channels and positions; weight and
// bias [C].
Tensor group_norm(const Tensor& input, int64_t num_groups,
                  const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);
// input [N, C, *]. training: normalised by the batch's statistics per channel, and
// running_mean / running_var (when given) move towards them by `momentum` (the
// variance unbiased), in place; otherwise by the running statistics, which must be
// given. weight and bias [C].
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& running_mean,
                  const std::optional<Tensor>& running_var,
                  const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
// ops/pad.cpp. PyTorch's F.pad: `pad` holds (before, after) pairs from the last
// dim backwards; a negative amount crops. Only mode "constant" (value: 0 if none).
Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode = "constant",
           std::optional<double> value = std::nullopt);
// softmax(q k^T / sqrt(E) + mask) v over [..., L, E] queries and [..., S, E] keys,
// [..., S, Ev] values. attn_mask broadcasts to [..., L, S]: Bool (true: attend) or
// added to the scores; is_causal masks keys after each query (no attn_mask then).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask = std::nullopt,
                                    bool is_causal = false);

}  // namespace strata::nn
