#pragma once

// The models of the per-sample-gradient workloads (issues 5 and 26), shared by the
// examples and bench/vmap.cpp: an MLP 784-128-10, the small MNIST-shaped CNN and
// its GroupNorm variant, a small Transformer block classifier, each with a std::map of parameters and a mean
// cross-entropy loss, plus the per-sample loop every vmap(grad) result is checked
// against. The deterministic
// initialisation follows ../shared/peers/torch's scripts, so the numbers compare
// with theirs.

#include <strata/strata.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace models {

namespace st = strata;
using Params = std::map<std::string, st::Tensor>;

// sin(a i + b) over the flattened index i, computed in Float64 and stored as
// Float32 (the peer scripts' det()).
inline st::Tensor det(const st::Shape& shape, double a, double b = 0.0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (st::arange(n, st::kFloat64) * a + b).sin().to(st::kFloat32).reshape(shape);
}

// Labels (7 i + 3) mod 10, as the peer scripts make them.
inline st::Tensor peer_labels(int64_t batch) {
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<size_t>(i)] = (i * 7 + 3) % 10;
  return st::tensor(labels, {batch});
}

inline Params mlp_params() {
  return {{"w1", det({128, 784}, 0.61) * (1.0 / 28.0)},
          {"b1", det({128}, 0.23) * 0.1},
          {"w2", det({10, 128}, 0.79) * (1.0 / 11.3)},
          {"b2", det({10}, 0.41) * 0.1}};
}

// x [N, 784] -> logits [N, 10].
inline st::Tensor mlp(const Params& p, const st::Tensor& x) {
  st::Tensor h = st::nn::linear(x, p.at("w1"), p.at("b1")).relu();
  return st::nn::linear(h, p.at("w2"), p.at("b2"));
}

// One sample: x [784], y [] (an Int64 class).
inline st::Tensor mlp_sample_loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  return st::nn::cross_entropy(mlp(p, x.unsqueeze(0)), y.unsqueeze(0));
}

// conv 1->32 3x3, conv 32->64 3x3, fc 9216->128, fc 128->10; weights scaled by
// 1/sqrt(fan-in), biases by 1/10, in the order of the peer's parameters().
inline Params cnn_params() {
  const std::vector<std::pair<std::string, st::Shape>> shapes = {
      {"conv1.weight", {32, 1, 3, 3}},  {"conv1.bias", {32}},
      {"conv2.weight", {64, 32, 3, 3}}, {"conv2.bias", {64}},
      {"fc1.weight", {128, 9216}},      {"fc1.bias", {128}},
      {"fc2.weight", {10, 128}},        {"fc2.bias", {10}}};
  Params params;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, shape] = shapes[i];
    int64_t fan_in = 1;
    for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
    const double scale = shape.size() > 1 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.1;
    params.emplace(name, det(shape, 0.31 + 0.1 * static_cast<double>(i)) * scale);
  }
  return params;
}

// x [N, 1, 28, 28] -> logits [N, 10].
inline st::Tensor cnn(const Params& p, const st::Tensor& x) {
  st::Tensor h = st::nn::conv2d(x, p.at("conv1.weight"), p.at("conv1.bias")).relu();
  h = st::nn::conv2d(h, p.at("conv2.weight"), p.at("conv2.bias")).relu();
  h = st::nn::max_pool2d(h, 2).flatten(1);
  h = st::nn::linear(h, p.at("fc1.weight"), p.at("fc1.bias")).relu();
  return st::nn::linear(h, p.at("fc2.weight"), p.at("fc2.bias"));
}

// One sample: x [1, 28, 28], y [].
inline st::Tensor cnn_sample_loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  return st::nn::cross_entropy(cnn(p, x.unsqueeze(0)), y.unsqueeze(0));
}

// The same models for DP-SGD's ghost clipping (st::dp::ghost): the batch's
// per-sample losses [N], every parameter through a GhostTape layer.
inline st::Tensor mlp_ghost_loss(const Params& p, const st::Tensor& x, const st::Tensor& y,
                                 st::dp::GhostTape& tape) {
  const st::Tensor h = tape.linear(x, p.at("w1"), p.at("b1")).relu();
  return st::nn::cross_entropy(tape.linear(h, p.at("w2"), p.at("b2")), y,
                               st::nn::Reduction::None);
}

inline st::Tensor cnn_ghost_loss(const Params& p, const st::Tensor& x, const st::Tensor& y,
                                 st::dp::GhostTape& tape) {
  st::Tensor h = tape.conv2d(x, p.at("conv1.weight"), p.at("conv1.bias")).relu();
  h = tape.conv2d(h, p.at("conv2.weight"), p.at("conv2.bias")).relu();
  h = st::nn::max_pool2d(h, 2).flatten(1);
  h = tape.linear(h, p.at("fc1.weight"), p.at("fc1.bias")).relu();
  return st::nn::cross_entropy(tape.linear(h, p.at("fc2.weight"), p.at("fc2.bias")), y,
                               st::nn::Reduction::None);
}

// The GroupNorm CNN of differentially private training (BatchNorm would mix the
// samples): conv 1->16 3x3, GroupNorm(4), conv 16->32 3x3, GroupNorm(8), each
// with relu and a 2x2 max pool, then fc 800->10.
inline std::vector<std::pair<std::string, st::Shape>> gn_cnn_param_shapes() {
  return {{"conv1.weight", {16, 1, 3, 3}},
          {"conv1.bias", {16}},
          {"gn1.weight", {16}},
          {"gn1.bias", {16}},
          {"conv2.weight", {32, 16, 3, 3}},
          {"conv2.bias", {32}},
          {"gn2.weight", {32}},
          {"gn2.bias", {32}},
          {"fc.weight", {10, 800}},
          {"fc.bias", {10}}};
}

// 1 / sqrt(fan-in) for a weight, 0.1 for a vector.
inline double fan_in_scale(const st::Shape& shape) {
  int64_t fan_in = 1;
  for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
  return shape.size() > 1 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.1;
}

// A GroupNorm's weight starts at 1 (plus the small deterministic values).
inline bool is_gn_gain(const std::string& name) {
  return name.starts_with("gn") && name.ends_with("weight");
}

inline Params gn_cnn_params() {
  const std::vector<std::pair<std::string, st::Shape>> shapes = gn_cnn_param_shapes();
  Params params;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, shape] = shapes[i];
    st::Tensor value = det(shape, 0.29 + 0.1 * static_cast<double>(i)) * fan_in_scale(shape);
    if (is_gn_gain(name)) value = value + 1.0;
    params.emplace(name, value);
  }
  return params;
}

// x [N, 1, 28, 28] -> logits [N, 10].
inline st::Tensor gn_cnn(const Params& p, const st::Tensor& x) {
  st::Tensor h = st::nn::conv2d(x, p.at("conv1.weight"), p.at("conv1.bias"));
  h = st::nn::max_pool2d(st::nn::group_norm(h, 4, p.at("gn1.weight"), p.at("gn1.bias")).relu(), 2);
  h = st::nn::conv2d(h, p.at("conv2.weight"), p.at("conv2.bias"));
  h = st::nn::max_pool2d(st::nn::group_norm(h, 8, p.at("gn2.weight"), p.at("gn2.bias")).relu(), 2);
  return st::nn::linear(h.flatten(1), p.at("fc.weight"), p.at("fc.bias"));
}

// One sample: x [1, 28, 28], y [].
inline st::Tensor gn_cnn_sample_loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  return st::nn::cross_entropy(gn_cnn(p, x.unsqueeze(0)), y.unsqueeze(0));
}

// The Transformer block classifier of issue 26: token embedding 100 x 32 plus
// learned positions, a pre-LN block (4-head self-attention, MLP 32-64-32 with gelu),
// mean pooling over the 16 positions and a linear classifier.
constexpr int64_t kVocab = 100, kDim = 32, kHeads = 4, kSeq = 16, kHidden = 64, kClasses = 5;

inline Params transformer_params() {
  const double s = 1.0 / std::sqrt(static_cast<double>(kDim));
  return {{"embed", det({kVocab, kDim}, 0.37)},
          {"pos", det({kSeq, kDim}, 0.53) * 0.1},
          {"ln1.w", det({kDim}, 0.11) * 0.1 + 1.0},
          {"ln1.b", det({kDim}, 0.13) * 0.1},
          {"wq", det({kDim, kDim}, 0.17) * s},
          {"wk", det({kDim, kDim}, 0.19) * s},
          {"wv", det({kDim, kDim}, 0.23) * s},
          {"wo", det({kDim, kDim}, 0.29) * s},
          {"bo", det({kDim}, 0.31) * 0.1},
          {"ln2.w", det({kDim}, 0.41) * 0.1 + 1.0},
          {"ln2.b", det({kDim}, 0.43) * 0.1},
          {"w1", det({kHidden, kDim}, 0.47) * s},
          {"b1", det({kHidden}, 0.59) * 0.1},
          {"w2", det({kDim, kHidden}, 0.61) / std::sqrt(static_cast<double>(kHidden))},
          {"b2", det({kDim}, 0.67) * 0.1},
          {"head.w", det({kClasses, kDim}, 0.71) * s},
          {"head.b", det({kClasses}, 0.73) * 0.1}};
}

// [L, D] -> [H, L, D / H] and back.
inline st::Tensor split_heads(const st::Tensor& x) {
  return x.reshape({kSeq, kHeads, kDim / kHeads}).transpose(0, 1);
}
inline st::Tensor merge_heads(const st::Tensor& x) {
  return x.transpose(0, 1).reshape({kSeq, kDim});
}

// One sample: tokens [16] (Int64), label [] -> the cross-entropy of its logits.
inline st::Tensor transformer_sample_loss(const Params& p, const st::Tensor& tokens,
                                          const st::Tensor& label) {
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

// The per-sample gradients one at a time: grad of the sample loss per sample,
// stacked. The reference every vmap(grad) result is checked against.
template <class SampleLoss>
Params per_sample_loop(SampleLoss loss, const Params& params, const st::Tensor& x,
                       const st::Tensor& y) {
  std::map<std::string, std::vector<st::Tensor>> parts;
  auto grad = st::grad(loss);
  for (int64_t i = 0; i < x.size(0); ++i) {
    for (auto& [name, g] : grad(params, x.select(0, i), y.select(0, i))) parts[name].push_back(g);
  }
  Params stacked;
  for (const auto& [name, gs] : parts) stacked.emplace(name, st::stack(gs, 0));
  return stacked;
}

// The largest |a - b|, and whether it is within 1e-5 + 1e-4 max |reference| (Float32
// results of the same math summed in different orders).
struct Agreement {
  double max_abs_diff;
  bool ok;
};
inline Agreement agreement(const st::Tensor& a, const st::Tensor& reference) {
  const double diff = (a - reference).abs().amax().item<double>();
  return {diff, diff <= 1e-5 + 1e-4 * reference.abs().amax().item<double>()};
}

// The fastest of `reps` calls of f, in milliseconds (the first call warms caches).
template <class F>
double best_ms(F&& f, int reps = 5) {
  double best = 1e300;
  for (int r = 0; r <= reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    if (r > 0) best = std::min(best, took.count());
  }
  return best;
}

}  // namespace models
