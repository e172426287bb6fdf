#pragma once

// Ghost clipping: the clipped sum of per-sample gradients without the per-sample
// gradients. See Note [Ghost clipping].
//
//   auto batch_loss = [](const Params& p, const Tensor& x, const Tensor& y,
//                        dp::GhostTape& tape) {
//     Tensor h = tape.linear(x, p.at("w1"), p.at("b1")).relu();
//     return nn::cross_entropy(tape.linear(h, p.at("w2"), p.at("b2")), y,
//                              nn::Reduction::None);  // [B]: one loss per sample
//   };
//   dp::private_gradient(group, dp::ghost(batch_loss), params, x, y, ...);

#include "distributed/dp/clipping.h"
#include "func/tree.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace strata::dp {

// Note [Ghost clipping]
// Clipping needs each sample's gradient norm |g_i| and then sum_i c_i g_i with
// c_i = min(1, C / (|g_i| + 1e-6)). Neither needs g_i itself for a layer whose
// weight gradient is a product of what it saw and what came back: for
// y = h W^T + b on sample i, with h_i [T, in] its inputs and d_i = dL_i/dy_i
// [T, out], the gradient is d_i^T h_i, so
//   |dW_i|^2 = <h_i h_i^T, d_i d_i^T>   (= |d_i|^2 |h_i|^2 when T = 1),
//   |db_i|^2 = |sum_t d_i[t]|^2,
//   sum_i c_i dW_i = (c d)^T h   (one GEMM over the batch).
// So one forward of the batch and one backward that stops at the layers'
// inputs (no weight gradients) give every norm, and the clipped sum follows from
// the saved (h, d) pairs: no second backward. GhostTape's layers are custom
// functions whose vjp rule saves (h, d) and returns only the input's gradient.
// Where h_i h_i^T costs more than d_i^T h_i (long T), the layer forms d_i^T h_i
// per sample instead; a conv2d forms its per-sample weight gradients (small:
// out x in x k x k each) from (h, d) the same way. Every parameter leaf must
// reach the loss only through one GhostTape layer: a leaf no layer takes, or two
// take, is an error, and a leaf that also reaches the loss another way is
// caught by its (otherwise zero) ordinary gradient.
class GhostTape {
 public:
  struct Layer;

  // input [B, ..., in] (the batch first), weight [out, in], bias [out].
  Tensor linear(const Tensor& input, const Tensor& weight,
                const std::optional<Tensor>& bias = std::nullopt);
  // input [B, C, H, W], weight [O, C, kH, kW], bias [O]; groups = 1.
  Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                IntArrayRef stride = {1}, IntArrayRef padding = {0},
                IntArrayRef dilation = {1});

  // Used by ghost_clip_and_sum_leaves.
  explicit GhostTape(const std::vector<Tensor>& entered_leaves);
  ~GhostTape();
  GhostTape(const GhostTape&) = delete;
  GhostTape& operator=(const GhostTape&) = delete;
  const std::vector<std::shared_ptr<Layer>>& layers() const { return layers_; }

 private:
  Tensor call(std::shared_ptr<Layer> layer, const Tensor& input, const Tensor& weight,
              const std::optional<Tensor>& bias);
  int64_t leaf_of(const Tensor& t, const char* role) const;

  std::vector<const void*> leaf_ids_;
  std::vector<std::shared_ptr<Layer>> layers_;
};

// batch_losses(leaves, tape) -> [B], one loss per sample; leaves are the
// parameters' leaves as the transform gives them (to be unflattened).
using GhostBatchLosses =
    std::function<Tensor(const std::vector<Tensor>& leaves, GhostTape& tape)>;

// Like clip_and_sum_leaves, from the batch's losses instead of per-sample gradients.
ClippedSum<std::vector<Tensor>> ghost_clip_and_sum_leaves(const GhostBatchLosses& batch_losses,
                                                          const std::vector<Tensor>& leaves,
                                                          int64_t batch,
                                                          const std::vector<double>& max_norms,
                                                          bool per_layer);

// A loss for dp::private_gradient and dp::DpSgd that takes the ghost route:
// batch_loss(params, x, y, tape) -> [B], x and y the batch's rows.
template <class F>
struct GhostLoss {
  F batch_loss;
};
template <class F>
GhostLoss<F> ghost(F batch_loss) {
  return {std::move(batch_loss)};
}

template <class F, class Params>
ClippedSum<Params> ghost_clip_and_sum(const GhostLoss<F>& loss, const Params& params,
                                      const Tensor& x, const Tensor& y,
                                      const std::vector<double>& max_norms, bool per_layer) {
  auto losses = [&](const std::vector<Tensor>& leaves, GhostTape& tape) {
    return loss.batch_loss(tree::unflatten_like(params, leaves), x, y, tape);
  };
  auto [sum, norms] = ghost_clip_and_sum_leaves(losses, tree::flatten(params), x.size(0),
                                                max_norms, per_layer);
  return {tree::unflatten_like(params, sum), norms};
}

}  // namespace strata::dp
