// vmap costs, the workloads of issue 5 (compare with bench/peer_vmap.py, which
// runs PyTorch 1.13's functorch on the same workloads; both together:
// bench/run_vmap_comparison.sh). Models and data: examples/models.h, the peer
// scripts' shapes and deterministic values.
//   Mlp<Method>/B/T   per-sample gradients of a 784-128-10 ReLU MLP's cross-entropy
//                     w.r.t. a std::map of its parameters, batch B, T threads, by
//                     VmapGrad (vmap(grad(loss))), Loop (grad per sample, stacked) or
//                     HandWritten (the analytic batched formulas: two GEMMs and two
//                     einsum outer products, the peer's "einsum" reference)
//   MlpWriteFloor/B/T the MLP rows' physical limit: zeroing, in memory reused call
//                     after call, as many bytes as the per-sample gradients hold
//   Cnn<Method>/B/T   the same for the MNIST-shaped CNN (VmapGrad, Loop), and
//                     CnnBatchGrad/B/T, the floor per-sample gradients are held
//                     against: grad of the batch's mean loss, one gradient per parameter
//   GnCnnVmapGrad/B/T, TransformerVmapGrad/B/T  vmap(grad) of issue 26's GroupNorm
//                     CNN and Transformer block classifier (examples/models.h), and
//                     GnCnnBatchGrad/B/T, the GroupNorm CNN's batch-gradient floor
//   VmapAddChain/L    64 adds on a [4] sample under L nested vmaps (batch 2 each);
//                     counters ns/op and, against the eager chain timed alongside,
//                     ns/op/level = (t_L - t_eager) / (64 L)
// Counter peak_MiB: the resident memory one call adds at its peak (bench/bench_support.h).
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_support.h"
#include "models.h"

namespace st = strata;
using models::Params;

namespace {

// Sets counter peak_MiB for one call of f (see bench/bench_support.h); left out
// where the kernel does not let the high-water mark be reset.
void count_peak_memory(benchmark::State& state, const std::function<void()>& f) {
  f();  // first-call costs (thread pools, code pages) are not the workload's
  if (const std::optional<double> peak = bench::peak_memory_mib(f)) {
    state.counters["peak_MiB"] = *peak;
  }
}

template <class F>
void run_gradients(benchmark::State& state, F gradients) {
  const bench::ThreadLimit threads(state.range(1));
  count_peak_memory(state, [&] { gradients(); });
  for (auto _ : state) {
    Params g = gradients();
    benchmark::DoNotOptimize(g.begin()->second.data_ptr());
  }
}

struct MlpData {
  Params params = models::mlp_params();
  st::Tensor x, y;
  explicit MlpData(int64_t batch)
      : x(models::det({batch, 784}, 0.37)), y(models::peer_labels(batch)) {}
};

void MlpVmapGrad(benchmark::State& state) {
  const MlpData d(state.range(0));
  auto f = st::vmap(st::grad(models::mlp_sample_loss), {.in_dims = {st::none, 0, 0}});
  run_gradients(state, [&] { return f(d.params, d.x, d.y); });
}

void MlpLoop(benchmark::State& state) {
  const MlpData d(state.range(0));
  run_gradients(
      state, [&] { return models::per_sample_loop(models::mlp_sample_loss, d.params, d.x, d.y); });
}

// d loss_i / d logits_i = softmax - one_hot, back through the two layers; each
// weight's per-sample gradient is an outer product.
Params mlp_hand_written(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  const st::Tensor h = st::nn::linear(x, p.at("w1"), p.at("b1"));
  const st::Tensor a = h.relu();
  const st::Tensor logits = st::nn::linear(a, p.at("w2"), p.at("b2"));
  const st::Tensor one_hot = y.unsqueeze(1).eq(st::arange(10).unsqueeze(0)).to(st::kFloat32);
  const st::Tensor dz = logits.softmax(1) - one_hot;
  const st::Tensor dh = dz.matmul(p.at("w2")) * (h > 0.0);
  return {{"w1", st::einsum("bi,bj->bij", {dh, x})},
          {"b1", dh},
          {"w2", st::einsum("bi,bj->bij", {dz, a})},
          {"b2", dz}};
}

void MlpHandWritten(benchmark::State& state) {
  const MlpData d(state.range(0));
  const Params reference = models::per_sample_loop(models::mlp_sample_loss, d.params, d.x, d.y);
  for (const auto& [name, g] : mlp_hand_written(d.params, d.x, d.y)) {
    if (!models::agreement(g, reference.at(name)).ok) {
      state.SkipWithError(("hand-written per-sample gradient of " + name + " is wrong").c_str());
      return;
    }
  }
  run_gradients(state, [&] { return mlp_hand_written(d.params, d.x, d.y); });
}

// At B = 32 the per-sample gradients are 13 MB, 12.8 of them w1's, which no cache
// here holds: a call of vmap(grad) cannot take less than writing them once.
void MlpWriteFloor(benchmark::State& state) {
  const bench::ThreadLimit threads(state.range(1));
  int64_t per_sample = 0;
  for (const auto& [name, p] : models::mlp_params()) per_sample += p.numel();
  const st::Tensor gradients = st::empty({state.range(0) * per_sample}, st::kFloat32);
  for (auto _ : state) benchmark::DoNotOptimize(gradients.zero_().data_ptr());
}

struct CnnData {
  Params params = models::cnn_params();
  st::Tensor x, y;
  explicit CnnData(int64_t batch)
      : x(models::det({batch, 1, 28, 28}, 0.37)), y(models::peer_labels(batch)) {}
};

void CnnVmapGrad(benchmark::State& state) {
  const CnnData d(state.range(0));
  auto f = st::vmap(st::grad(models::cnn_sample_loss), {.in_dims = {st::none, 0, 0}});
  run_gradients(state, [&] { return f(d.params, d.x, d.y); });
}

void CnnLoop(benchmark::State& state) {
  const CnnData d(state.range(0));
  run_gradients(
      state, [&] { return models::per_sample_loop(models::cnn_sample_loss, d.params, d.x, d.y); });
}

// The plain (not per-sample) batch gradient of the same CNN on the same data: the
// ratio CnnVmapGrad / CnnBatchGrad is what per-sample gradients cost over it.
void CnnBatchGrad(benchmark::State& state) {
  const CnnData d(state.range(0));
  auto f = st::grad([](const Params& p, const st::Tensor& x, const st::Tensor& y) {
    return st::nn::cross_entropy(models::cnn(p, x), y);
  });
  run_gradients(state, [&] { return f(d.params, d.x, d.y); });
}

void GnCnnVmapGrad(benchmark::State& state) {
  const CnnData d(state.range(0));
  const Params params = models::gn_cnn_params();
  auto f = st::vmap(st::grad(models::gn_cnn_sample_loss), {.in_dims = {st::none, 0, 0}});
  run_gradients(state, [&] { return f(params, d.x, d.y); });
}

// Its floor, as CnnBatchGrad is the MNIST CNN's: the plain gradient of the batch's
// mean loss (GroupNorm normalises each sample alone, so the forward is the same).
void GnCnnBatchGrad(benchmark::State& state) {
  const CnnData d(state.range(0));
  const Params params = models::gn_cnn_params();
  auto f = st::grad([](const Params& p, const st::Tensor& x, const st::Tensor& y) {
    return st::nn::cross_entropy(models::gn_cnn(p, x), y);
  });
  run_gradients(state, [&] { return f(params, d.x, d.y); });
}

// Tokens (i * 7 + 3 j) mod 100 for sample i, position j; labels i mod 5.
void TransformerVmapGrad(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const Params params = models::transformer_params();
  std::vector<int64_t> token_values, label_values;
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < models::kSeq; ++j) {
      token_values.push_back((i * 7 + j * 3) % models::kVocab);
    }
    label_values.push_back(i % models::kClasses);
  }
  const st::Tensor tokens = st::tensor(token_values, {batch, models::kSeq});
  const st::Tensor labels = st::tensor(label_values);
  auto f = st::vmap(st::grad(models::transformer_sample_loss), {.in_dims = {st::none, 0, 0}});
  run_gradients(state, [&] { return f(params, tokens, labels); });
}

constexpr int kChain = 64;

st::Tensor add_chain(const st::Tensor& x) {
  st::Tensor y = x;
  for (int i = 0; i < kChain; ++i) y = y + x;
  return y;
}

st::Tensor nested_vmap(int levels, const st::Tensor& x) {
  if (levels == 0) return add_chain(x);
  return st::vmap([levels](const st::Tensor& t) { return nested_vmap(levels - 1, t); })(x);
}

// Per op, the best of a few timed batches of eager chains on x.
double eager_ns_per_op(const st::Tensor& x) {
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) benchmark::DoNotOptimize(add_chain(x).impl());
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / (200.0 * kChain));
  }
  return best;
}

void VmapAddChain(benchmark::State& state) {
  const int levels = static_cast<int>(state.range(0));
  st::Shape shape(std::vector<int64_t>(static_cast<size_t>(levels), 2));
  shape.push_back(4);
  const st::Tensor x = st::full(shape, 0.5, st::kFloat32);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(nested_vmap(levels, x).impl());
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  const double per_op = took.count() / (static_cast<double>(state.iterations()) * kChain);
  state.counters["ns/op"] = per_op;
  if (levels > 0) {
    state.counters["ns/op/level"] =
        (per_op - eager_ns_per_op(st::full({4}, 0.5, st::kFloat32))) / levels;
  }
}

BENCHMARK(MlpVmapGrad)->ArgsProduct({{32, 256}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(MlpHandWritten)->ArgsProduct({{32, 256}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(MlpWriteFloor)->ArgsProduct({{32, 256}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(MlpLoop)->ArgsProduct({{32, 256}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(CnnVmapGrad)->ArgsProduct({{32, 64}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(CnnBatchGrad)->ArgsProduct({{32, 64}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(CnnLoop)->ArgsProduct({{32, 64}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(GnCnnVmapGrad)->ArgsProduct({{32}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(GnCnnBatchGrad)->ArgsProduct({{32}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(TransformerVmapGrad)->ArgsProduct({{32}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(VmapAddChain)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
