// Differentially private SGD (DP-SGD) on the small MNIST-shaped CNN: every step
// takes each sample's gradient (vmap over grad), clips it to norm C, sums the
// clipped gradients, adds Gaussian noise of scale sigma C, averages, and takes an
// SGD step. The clipping is written for one sample, inside the vmapped function.
// The data are synthetic 28x28 images whose class is where a bright square sits;
// the loss over them must go down.
#include <strata/strata.h>

#include <chrono>
#include <cstdio>
#include <tuple>
#include <vector>

#include "models.h"

namespace st = strata;
using models::Params;

namespace {

constexpr double kClipNorm = 1.0;         // C
constexpr double kNoiseMultiplier = 0.5;  // sigma
constexpr double kLearningRate = 0.5;

struct Batch {
  st::Tensor x;  // [N, 1, 28, 28]
  st::Tensor y;  // [N]
};

// Class k: a 5x5 square in one of 2 rows x 5 columns of slots, on faint noise.
Batch make_batch(int64_t size, st::Generator& gen) {
  std::vector<float> pixels(static_cast<size_t>(size * 28 * 28), 0.0f);
  const st::Tensor labels = st::randint(0, 10, {size}, gen);
  const std::vector<int64_t> classes = labels.to_vector<int64_t>();
  for (int64_t n = 0; n < size; ++n) {
    const int64_t k = classes[static_cast<size_t>(n)];
    const int64_t top = 2 + 12 * (k / 5), left = 1 + 5 * (k % 5);
    for (int64_t r = top; r < top + 5; ++r) {
      for (int64_t c = left; c < left + 5; ++c)
        pixels[static_cast<size_t>((n * 28 + r) * 28 + c)] = 1;
    }
  }
  const st::Tensor noise = st::randn({size, 1, 28, 28}, gen) * 0.1;
  return {st::tensor(pixels, {size, 1, 28, 28}) + noise, labels};
}

// One sample's gradient clipped to norm C, its norm before clipping, and its loss.
std::tuple<Params, st::Tensor, st::Tensor> clipped_grad(const Params& p, const st::Tensor& x,
                                                        const st::Tensor& y) {
  auto [g, loss] = st::grad_and_value(models::cnn_sample_loss)(p, x, y);
  st::Tensor squared = st::zeros({});
  for (const auto& [name, leaf] : g) squared = squared + leaf.square().sum();
  const st::Tensor norm = squared.sqrt();
  const st::Tensor scale = (kClipNorm / (norm + 1e-6)).clamp(std::nullopt, 1.0);
  for (auto& [name, leaf] : g) leaf = leaf * scale;
  return {g, norm, loss};
}

double mean_loss(const Params& p, const std::vector<Batch>& batches) {
  double total = 0;
  for (const Batch& b : batches)
    total += st::nn::cross_entropy(models::cnn(p, b.x), b.y).item<double>();
  return total / static_cast<double>(batches.size());
}

}  // namespace

int main() {
  const int64_t batch_size = 16;
  const int steps = 6;
  st::Generator gen(2024);
  std::vector<Batch> batches;
  for (int i = 0; i < 3; ++i) batches.push_back(make_batch(batch_size, gen));
  Params params = models::cnn_params();
  auto per_sample = st::vmap(clipped_grad, {.in_dims = {st::none, 0, 0}});

  const double initial = mean_loss(params, batches);
  std::printf("DP-SGD on the MNIST-shaped CNN: batch %lld, C = %g, sigma = %g, lr = %g\n",
              static_cast<long long>(batch_size), kClipNorm, kNoiseMultiplier, kLearningRate);
  std::printf("loss over the %zu batches before training: %.4f\n", batches.size(), initial);
  for (int step = 0; step < steps; ++step) {
    const Batch& b = batches[static_cast<size_t>(step) % batches.size()];
    const auto start = std::chrono::steady_clock::now();
    const auto [clipped, norms, losses] = per_sample(params, b.x, b.y);
    for (auto& [name, p] : params) {
      const st::Tensor noise = st::randn(p.sizes(), gen) * (kNoiseMultiplier * kClipNorm);
      const st::Tensor noisy_mean =
          (clipped.at(name).sum({0}) + noise) / static_cast<double>(batch_size);
      p = p - noisy_mean * kLearningRate;
    }
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    std::printf("step %d  loss %.4f  mean per-sample grad norm %.4f  %.1f ms\n", step,
                losses.mean().item<double>(), norms.mean().item<double>(), took.count());
  }
  const double final_loss = mean_loss(params, batches);
  const bool decreased = final_loss < initial;
  std::printf("loss over the %zu batches after %d steps: %.4f (%s)\n", batches.size(), steps,
              final_loss, decreased ? "went down: OK" : "did not go down: FAILED");
  return decreased ? 0 : 1;
}
