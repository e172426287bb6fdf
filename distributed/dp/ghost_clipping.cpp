#include "distributed/dp/ghost_clipping.h"

#include "func/custom/custom_function.h"
#include "func/grad/grad.h"
#include "func/vmap/vmap.h"
#include "ops/nn.h"
#include "ops/nn_backward.h"
#include "ops/ops.h"
#include "tensor/error.h"

#include <algorithm>
#include <string>
#include <utility>

namespace strata::dp {

namespace {
constexpr char kTag[] = "dp::ghost_clip_and_sum";
}  // namespace

struct GhostTape::Layer {
  bool conv = false;
  int64_t weight_leaf = -1, bias_leaf = -1;
  std::vector<int64_t> stride, padding, dilation;
  bool input_needs_grad = true;
  // Saved by the vjp rule: what the layer saw and the gradient that came back.
  Tensor input, grad_output;
};

GhostTape::GhostTape(const std::vector<Tensor>& entered_leaves) {
  for (const Tensor& leaf : entered_leaves) leaf_ids_.push_back(leaf.impl());
}

GhostTape::~GhostTape() = default;

int64_t GhostTape::leaf_of(const Tensor& t, const char* role) const {
  const auto found = std::find(leaf_ids_.begin(), leaf_ids_.end(), t.impl());
  STRATA_CHECK(found != leaf_ids_.end(), "dp::GhostTape", "the ", role,
               " of a layer must be a parameter leaf itself (not a view or a copy of one)");
  return found - leaf_ids_.begin();
}

Tensor GhostTape::linear(const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias) {
  STRATA_CHECK(input.dim() >= 2 && weight.dim() == 2, "dp::GhostTape::linear",
               "needs input [B, ..., in] and weight [out, in]; got ", input.dim(), " and ",
               weight.dim(), " dims");
  return call(std::make_shared<Layer>(), input, weight, bias);
}

Tensor GhostTape::conv2d(const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation) {
  auto layer = std::make_shared<Layer>();
  layer->conv = true;
  layer->stride.assign(stride.begin(), stride.end());
  layer->padding.assign(padding.begin(), padding.end());
  layer->dilation.assign(dilation.begin(), dilation.end());
  return call(std::move(layer), input, weight, bias);
}

Tensor GhostTape::call(std::shared_ptr<Layer> layer, const Tensor& input, const Tensor& weight,
                       const std::optional<Tensor>& bias) {
  layer->weight_leaf = leaf_of(weight, "weight");
  if (bias) layer->bias_leaf = leaf_of(*bias, "bias");
  // The batch's data itself (a plain tensor, of no transform) needs no gradient.
  const DispatchKeySet backends{DispatchKey::CPU, DispatchKey::CUDA};
  layer->input_needs_grad = !(input.key_set() - backends).empty();
  layers_.push_back(layer);
  auto forward = [l = layer](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const std::optional<Tensor> b = in.size() > 2 ? std::optional<Tensor>(in[2]) : std::nullopt;
    if (!l->conv) return {nn::linear(in[0], in[1], b)};
    return {nn::conv2d(in[0], in[1], b, l->stride, l->padding, l->dilation, 1)};
  };
  auto vjp = [layer](const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                     const std::vector<Tensor>& cotangents) {
    Layer& s = *layer;
    s.input = in[0];
    s.grad_output = cotangents[0].defined() ? cotangents[0] : zeros_like(out[0]);
    std::vector<Tensor> grads(in.size());
    if (!s.input_needs_grad) return grads;
    grads[0] = s.conv ? nn::conv2d_backward_input(s.grad_output, in[0].sizes(), in[1], s.stride,
                                                  s.padding, s.dilation, 1)
                      : s.grad_output.matmul(in[1]);
    return grads;
  };
  std::vector<Tensor> inputs = {input, weight};
  if (bias) inputs.push_back(*bias);
  const CustomFunction fn = custom_function(
      forward, {.vjp = vjp, .name = layer->conv ? "dp::GhostTape::conv2d" : "dp::GhostTape::linear"});
  return fn(inputs)[0];
}

namespace {

// One layer's per-sample gradients in the form its clipped sums come from.
struct LayerGrads {
  Tensor weight_sq, bias_sq;  // [B] squared norms, Float64
  Tensor per_sample_weight;   // [B, out * in] when formed per sample, else undefined
  Tensor h, d;                // [B, T, in], [B, T, out] (linear)
  Tensor bias_rows;           // [B, out]
};

// In the rows' own dtype, as clip_and_sum's norms are.
Tensor squared_rows(const Tensor& rows) {
  return rows.norm(2, {1}).to(kFloat64).square();
}

LayerGrads layer_grads(const GhostTape::Layer& layer, int64_t batch, const Tensor& weight) {
  STRATA_CHECK(layer.grad_output.defined(), kTag,
               "a GhostTape layer's output did not reach the loss");
  STRATA_CHECK(layer.input.dim() > 0 && layer.input.size(0) == batch, kTag,
               "a GhostTape layer's input must have the batch (", batch, " samples) on dim 0");
  LayerGrads g;
  const Tensor& d = layer.grad_output;
  if (layer.conv) {
    const Shape weight_sizes = weight.sizes();
    auto one = [&](const Tensor& di, const Tensor& hi) {
      return nn::conv2d_backward_weight(di.unsqueeze(0), hi.unsqueeze(0), weight_sizes,
                                        layer.stride, layer.padding, layer.dilation, 1);
    };
    g.per_sample_weight = vmap(one)(d, layer.input).reshape({batch, weight.numel()});
    g.weight_sq = squared_rows(g.per_sample_weight);
    g.bias_rows = d.sum({2, 3});
    g.bias_sq = squared_rows(g.bias_rows);
    return g;
  }
  const int64_t in = weight.size(1), out = weight.size(0);
  const int64_t positions = layer.input.numel() / (batch * in);
  g.h = layer.input.reshape({batch, positions, in});
  g.d = d.reshape({batch, positions, out});
  if (positions == 1) {
    g.weight_sq = squared_rows(g.h.reshape({batch, in})) * squared_rows(g.d.reshape({batch, out}));
  } else if (positions * positions <= in * out) {
    const Tensor hh = bmm(g.h, g.h.transpose(1, 2)), dd = bmm(g.d, g.d.transpose(1, 2));
    g.weight_sq = (hh * dd).to(kFloat64).sum({1, 2});
  } else {
    g.per_sample_weight = bmm(g.d.transpose(1, 2), g.h).reshape({batch, out * in});
    g.weight_sq = squared_rows(g.per_sample_weight);
  }
  g.bias_rows = g.d.sum({1});
  g.bias_sq = squared_rows(g.bias_rows);
  return g;
}

// sum_i c_i dW_i, shaped like the weight.
Tensor clipped_weight_sum(const LayerGrads& g, const Tensor& factor, const Tensor& weight) {
  const Tensor c = factor.to(weight.dtype());
  if (g.per_sample_weight.defined()) return c.matmul(g.per_sample_weight).reshape(weight.sizes());
  const int64_t batch = g.d.size(0), positions = g.d.size(1);
  const Tensor scaled = (g.d * c.reshape({batch, 1, 1})).reshape({batch * positions, -1});
  return scaled.transpose(0, 1).matmul(g.h.reshape({batch * positions, -1}));
}

}  // namespace

ClippedSum<std::vector<Tensor>> ghost_clip_and_sum_leaves(const GhostBatchLosses& batch_losses,
                                                          const std::vector<Tensor>& leaves,
                                                          int64_t batch,
                                                          const std::vector<double>& max_norms,
                                                          bool per_layer) {
  check_clipping_bounds(leaves.size(), max_norms, per_layer, kTag);
  const auto n_leaves = static_cast<int64_t>(leaves.size());
  std::vector<Tensor> sum(leaves.size());
  if (batch == 0) {
    for (size_t i = 0; i < leaves.size(); ++i) sum[i] = zeros_like(leaves[i]);
    const Device device = leaves[0].device();
    return {sum, per_layer ? zeros({0, n_leaves}, kFloat64, device) : zeros({0}, kFloat64, device)};
  }

  std::vector<std::shared_ptr<GhostTape::Layer>> layers;
  auto total_loss = [&](const std::vector<Tensor>& entered) {
    GhostTape tape(entered);
    const Tensor losses = batch_losses(entered, tape);
    STRATA_CHECK(losses.dim() == 1 && losses.size(0) == batch, kTag,
                 "the batch loss must return one loss per sample, [", batch, "]; got ",
                 losses.dim(), " dims");
    layers = tape.layers();
    return losses.sum();
  };
  const std::vector<Tensor> ordinary = grad(total_loss)(leaves);

  // Each leaf is taken by exactly one layer and reaches the loss no other way.
  std::vector<int64_t> uses(leaves.size(), 0);
  for (const auto& layer : layers) {
    ++uses[static_cast<size_t>(layer->weight_leaf)];
    if (layer->bias_leaf >= 0) ++uses[static_cast<size_t>(layer->bias_leaf)];
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    STRATA_CHECK(uses[i] == 1, kTag, "parameter leaf ", i, " is taken by ", uses[i],
                 " GhostTape layers; ghost clipping needs each leaf in exactly one (use the "
                 "per-sample path, dp::clip_and_sum, otherwise)");
    STRATA_CHECK(!ordinary[i].defined() || ordinary[i].norm().item<double>() == 0, kTag,
                 "parameter leaf ", i, " reaches the loss outside its GhostTape layer");
  }

  std::vector<LayerGrads> grads;
  std::vector<Tensor> squares(leaves.size());
  for (const auto& layer : layers) {
    const auto w = static_cast<size_t>(layer->weight_leaf);
    grads.push_back(layer_grads(*layer, batch, leaves[w]));
    squares[w] = grads.back().weight_sq;
    if (layer->bias_leaf >= 0) squares[static_cast<size_t>(layer->bias_leaf)] = grads.back().bias_sq;
  }
  const Tensor norms = stack(squares, 1).sqrt();
  std::vector<Tensor> factors(leaves.size());
  Tensor total;
  if (per_layer) {
    for (int64_t i = 0; i < n_leaves; ++i) {
      factors[static_cast<size_t>(i)] =
          clip_factor(norms.select(1, i), max_norms[static_cast<size_t>(i)]);
    }
  } else {
    total = norms.square().sum({1}).sqrt();
    std::fill(factors.begin(), factors.end(), clip_factor(total, max_norms[0]));
  }
  for (size_t k = 0; k < layers.size(); ++k) {
    const auto w = static_cast<size_t>(layers[k]->weight_leaf);
    sum[w] = clipped_weight_sum(grads[k], factors[w], leaves[w]);
    if (layers[k]->bias_leaf >= 0) {
      const auto b = static_cast<size_t>(layers[k]->bias_leaf);
      sum[b] = factors[b].to(leaves[b].dtype()).matmul(grads[k].bias_rows);
    }
  }
  return {sum, per_layer ? norms : total};
}

}  // namespace strata::dp
