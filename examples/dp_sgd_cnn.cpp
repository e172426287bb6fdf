// Differentially private SGD (DP-SGD) on the small MNIST-shaped CNN: every step
// takes each sample's gradient (vmap over grad), clips it to norm C, sums the
// clipped gradients, adds Gaussian noise of scale sigma C, averages, and takes an
// SGD step. The clipping is written for one sample, inside the vmapped function.
// The data are synthetic 28x28 images whose class is where a bright square sits;
// the loss over them must go down. `dp_sgd_cnn groupnorm` trains the GroupNorm
// variant of the CNN instead. The first batch's clipped per-sample gradients are
// checked against a loop of grad calls.
#include <strata/strata.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
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

struct Model {
  const char* name;
  Params (*params)();
  st::Tensor (*logits)(const Params&, const st::Tensor&);
  st::Tensor (*sample_loss)(const Params&, const st::Tensor&, const st::Tensor&);
};

// One sample's gradient clipped to norm C, its norm before clipping, and its loss.
std::tuple<Params, st::Tensor, st::Tensor> clipped_grad(const Model& model, const Params& p,
                                                        const st::Tensor& x, const st::Tensor& y) {
  auto [g, loss] = st::grad_and_value(model.sample_loss)(p, x, y);
  st::Tensor squared = st::zeros({});
  for (const auto& [name, leaf] : g) squared = squared + leaf.square().sum();
  const st::Tensor norm = squared.sqrt();
  const st::Tensor scale = (kClipNorm / (norm + 1e-6)).clamp(std::nullopt, 1.0);
  for (auto& [name, leaf] : g) leaf = leaf * scale;
  return {g, norm, loss};
}

double mean_loss(const Model& model, const Params& p, const std::vector<Batch>& batches) {
  double total = 0;
  for (const Batch& b : batches)
    total += st::nn::cross_entropy(model.logits(p, b.x), b.y).item<double>();
  return total / static_cast<double>(batches.size());
}

// Whether the per-sample clipped gradients of vmap agree with a loop over the batch.
template <class PerSample>
bool agrees_with_loop(const Model& model, const PerSample& per_sample, const Params& params,
                      const Batch& b) {
  const Params vmapped = std::get<0>(per_sample(params, b.x, b.y));
  std::map<std::string, std::vector<st::Tensor>> parts;
  for (int64_t i = 0; i < b.x.size(0); ++i) {
    const Params grads =
        std::get<0>(clipped_grad(model, params, b.x.select(0, i), b.y.select(0, i)));
    for (const auto& [name, g] : grads) parts[name].push_back(g);
  }
  bool ok = true;
  for (const auto& [name, gs] : parts)
    ok = ok && models::agreement(vmapped.at(name), st::stack(gs, 0)).ok;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const bool group_norm = argc > 1 && std::string_view(argv[1]) == "groupnorm";
  const Model model = group_norm ? Model{"GroupNorm CNN", &models::gn_cnn_params, &models::gn_cnn,
                                         &models::gn_cnn_sample_loss}
                                 : Model{"MNIST-shaped CNN", &models::cnn_params, &models::cnn,
                                         &models::cnn_sample_loss};
  const int64_t batch_size = 16;
  const int steps = 6;
  st::Generator gen(2024);
  std::vector<Batch> batches;
  for (int i = 0; i < 3; ++i) batches.push_back(make_batch(batch_size, gen));
  Params params = model.params();
  auto per_sample = st::vmap([&](const Params& p, const st::Tensor& x,
                                 const st::Tensor& y) { return clipped_grad(model, p, x, y); },
                             {.in_dims = {st::none, 0, 0}});

  const bool agree = agrees_with_loop(model, per_sample, params, batches[0]);
  std::printf("vmap(grad) against the loop: %s\n", agree ? "OK" : "MISMATCH");
  const double initial = mean_loss(model, params, batches);
  std::printf("DP-SGD on the %s: batch %lld, C = %g, sigma = %g, lr = %g\n", model.name,
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
  const double final_loss = mean_loss(model, params, batches);
  const bool decreased = agree && final_loss < initial;
  std::printf("loss over the %zu batches after %d steps: %.4f (%s)\n", batches.size(), steps,
              final_loss, decreased ? "went down: OK" : "did not go down: FAILED");
  return decreased ? 0 : 1;
}
