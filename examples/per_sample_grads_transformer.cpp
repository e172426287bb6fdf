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

constexpr double kClipNorm = 1.0;         // C
constexpr double kNoiseMultiplier = 0.5;  // sigma

}  // namespace

int main() {
  const int64_t batch = 32;
  st::Generator gen(26);
  const st::Tensor tokens = st::randint(0, models::kVocab, {batch, models::kSeq}, gen);
  const st::Tensor labels = st::randint(0, models::kClasses, {batch}, gen);
  const Params params = models::transformer_params();

  const auto loss = models::transformer_sample_loss;
  auto per_sample_grads = st::vmap(st::grad(loss), {.in_dims = {st::none, 0, 0}});
  const Params vmapped = per_sample_grads(params, tokens, labels);
  const Params looped = models::per_sample_loop(loss, params, tokens, labels);
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
      models::best_ms([&] { models::per_sample_loop(loss, params, tokens, labels); }, 1);
  std::printf("time per batch: vmap(grad) %.2f ms, loop of grad %.2f ms (%.1fx)\n", vmap_ms,
              loop_ms, loop_ms / vmap_ms);
  return all_ok ? 0 : 1;
}
