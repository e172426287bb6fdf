// Per-sample gradients of a small pre-LN Transformer block classifier (token
// embedding 100 x 32 plus learned positions, 4-head self-attention, MLP 32-64-32
// with gelu, mean pooling over the 16 positions, a linear classifier), then one
// DP-SGD step: each sample's gradient clipped to norm C, summed, noised. The
// vmap(grad) gradients are checked against a loop of grad calls, one per sample.
#include <strata/strata.h>

#include <cstdio>
#include <vector>

#include "models.h"

namespace st = strata;
using models::Params;

namespace {

constexpr int64_t kVocab = 100, kDim = 32, kHeads = 4, kSeq = 16, kHidden = 64, kClasses = 5;
constexpr double kClipNorm = 1.0;         // C
constexpr double kNoiseMultiplier = 0.5;  // sigma

Params transformer_params() {
  const double s = 1.0 / std::sqrt(static_cast<double>(kDim));
  return {{"embed", models::det({kVocab, kDim}, 0.37)},
          {"pos", models::det({kSeq, kDim}, 0.53) * 0.1},
          {"ln1.w", models::det({kDim}, 0.11) * 0.1 + 1.0},
          {"ln1.b", models::det({kDim}, 0.13) * 0.1},
          {"wq", models::det({kDim, kDim}, 0.17) * s},
          {"wk", models::det({kDim, kDim}, 0.19) * s},
          {"wv", models::det({kDim, kDim}, 0.23) * s},
          {"wo", models::det({kDim, kDim}, 0.29) * s},
          {"bo", models::det({kDim}, 0.31) * 0.1},
          {"ln2.w", models::det({kDim}, 0.41) * 0.1 + 1.0},
          {"ln2.b", models::det({kDim}, 0.43) * 0.1},
          {"w1", models::det({kHidden, kDim}, 0.47) * s},
          {"b1", models::det({kHidden}, 0.59) * 0.1},
          {"w2", models::det({kDim, kHidden}, 0.61) / std::sqrt(static_cast<double>(kHidden))},
          {"b2", models::det({kDim}, 0.67) * 0.1},
          {"head.w", models::det({kClasses, kDim}, 0.71) * s},
          {"head.b", models::det({kClasses}, 0.73) * 0.1}};
}

// [L, D] -> [H, L, D / H] and back.
st::Tensor split_heads(const st::Tensor& x) {
  return x.reshape({kSeq, kHeads, kDim / kHeads}).transpose(0, 1);
}
st::Tensor merge_heads(const st::Tensor& x) { return x.transpose(0, 1).reshape({kSeq, kDim}); }

// One sample: tokens [16] (Int64), label [] -> the cross-entropy of its logits.
st::Tensor sample_loss(const Params& p, const st::Tensor& tokens, const st::Tensor& label) {
  namespace nn = st::nn;
  st::Tensor x = nn::embedding(p.at("embed"), tokens) + p.at("pos");
  const st::Tensor h = nn::layer_norm(x, {kDim}, p.at("ln1.w"), p.at("ln1.b"));
  const st::Tensor attended = nn::scaled_dot_product_attention(
      split_heads(nn::linear(h, p.at("wq"))), split_heads(nn::linear(h, p.at("wk"))),
      split_heads(nn::linear(h, p.at("wv"))));
  x = x + nn::linear(merge_heads(attended), p.at("wo"), p.at("bo"));
  const st::Tensor h2 = nn::layer_norm(x, {kDim}, p.at("ln2.w"), p.at("ln2.b"));
  x = x + nn::linear(nn::gelu(nn::linear(h2, p.at("w1"), p.at("b1"))), p.at("w2"), p.at("b2"));
  const st::Tensor logits =
      nn::linear(x.mean({0}, /*keepdim=*/true), p.at("head.w"), p.at("head.b"));
  return nn::cross_entropy(logits, label.unsqueeze(0));
}

}  // namespace

int main() {
  const int64_t batch = 32;
  st::Generator gen(26);
  const st::Tensor tokens = st::randint(0, kVocab, {batch, kSeq}, gen);
  const st::Tensor labels = st::randint(0, kClasses, {batch}, gen);
  const Params params = transformer_params();

  auto per_sample_grads = st::vmap(st::grad(sample_loss), {.in_dims = {st::none, 0, 0}});
  const Params vmapped = per_sample_grads(params, tokens, labels);
  const Params looped = models::per_sample_loop(sample_loss, params, tokens, labels);
  bool all_ok = true;
  double worst = 0;
  for (const auto& [name, g] : vmapped) {
    const models::Agreement a = models::agreement(g, looped.at(name));
    all_ok = all_ok && a.ok;
    worst = std::max(worst, a.max_abs_diff);
    if (!a.ok) std::printf("  %s differs by %.3g\n", name.c_str(), a.max_abs_diff);
  }
  std::printf("per-sample gradients of a pre-LN Transformer block, batch %lld, %zu tensors\n",
              static_cast<long long>(batch), vmapped.size());
  std::printf("vmap(grad) against the loop: %s (max |difference| %.3g)\n",
              all_ok ? "OK" : "MISMATCH", worst);

  // DP-SGD: clip each sample's gradient to norm C, sum, add N(0, (sigma C)^2) noise.
  st::Tensor squared = st::zeros({batch});
  for (const auto& [name, g] : vmapped) squared = squared + g.square().flatten(1).sum({1});
  const st::Tensor scale = (kClipNorm / (squared.sqrt() + 1e-6)).clamp(std::nullopt, 1.0);
  double clipped_norm = 0;
  for (const auto& [name, g] : vmapped) {
    std::vector<int64_t> scale_shape(static_cast<size_t>(g.dim()), 1);
    scale_shape[0] = batch;
    const std::vector<int64_t> sample_shape(g.sizes().begin() + 1, g.sizes().end());
    const st::Tensor noisy = (g * scale.reshape(scale_shape)).sum({0}) +
                             st::randn(sample_shape, gen) * (kNoiseMultiplier * kClipNorm);
    clipped_norm += (noisy / static_cast<double>(batch)).square().sum().item<double>();
  }
  std::printf("mean per-sample gradient norm before clipping %.4f; noisy update norm %.4f\n",
              squared.sqrt().mean().item<double>(), std::sqrt(clipped_norm));

  const double vmap_ms = models::best_ms([&] { per_sample_grads(params, tokens, labels); }, 3);
  const double loop_ms =
      models::best_ms([&] { models::per_sample_loop(sample_loss, params, tokens, labels); }, 1);
  std::printf("time per batch: vmap(grad) %.2f ms, loop of grad %.2f ms (%.1fx)\n", vmap_ms,
              loop_ms, loop_ms / vmap_ms);
  return all_ok ? 0 : 1;
}
