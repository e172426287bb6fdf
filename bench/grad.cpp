// Reverse-mode costs, the workloads of issue 4 (compare with bench/peer_grad.py,
// which runs PyTorch 1.13's functorch on the same workloads; both together:
// bench/run_grad_comparison.sh):
//   MlpBatchGrad/B/T   grad of the mean cross-entropy of a 784-128-10 ReLU MLP over
//                      a batch of B, w.r.t. a std::map of its parameters, T threads
//   AddChain/L         a chain of 64 one-element adds under L nested grad layers,
//                      forward + backward (L = 0: the chain alone); the per-op
//                      per-layer overhead is (t_L - t_0) / (64 L)
//   GradCubed          grad(grad(grad(f))) of f(x) = sin(x) x^2 on a 0-dim tensor
//   ScalarFunction     f itself, for scale
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "bench_support.h"

namespace st = strata;
namespace nn = strata::nn;

namespace {

using Params = std::map<std::string, st::Tensor>;

// sin(a i + b) over the flattened index i, like the peer scripts' det().
st::Tensor det(st::Shape shape, double a, double b = 0.0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (st::arange(n, st::kFloat64) * a + b).sin().to(st::kFloat32).reshape(shape);
}

Params mlp_params() {
  return {{"w1", det({128, 784}, 0.61) * (1.0 / 28.0)},
          {"b1", det({128}, 0.23) * 0.1},
          {"w2", det({10, 128}, 0.79) * (1.0 / 11.3)},
          {"b2", det({10}, 0.41) * 0.1}};
}

st::Tensor mlp_loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  st::Tensor h = nn::linear(x, p.at("w1"), p.at("b1")).relu();
  return nn::cross_entropy(nn::linear(h, p.at("w2"), p.at("b2")), y);
}

void MlpBatchGrad(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const bench::ThreadLimit threads(state.range(1));
  const Params params = mlp_params();
  const st::Tensor x = det({batch, 784}, 0.37);
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<size_t>(i)] = (i * 7 + 3) % 10;
  const st::Tensor y = st::tensor(labels, {batch});
  auto batch_grad = st::grad(mlp_loss);
  for (auto _ : state) {
    Params g = batch_grad(params, x, y);
    benchmark::DoNotOptimize(g.at("w1").data_ptr());
  }
}

constexpr int kChain = 64;

st::Tensor add_chain(const st::Tensor& x) {
  st::Tensor y = x;
  for (int i = 0; i < kChain; ++i) y = y + x;
  return y;
}

st::Tensor nested_grad(int levels, const st::Tensor& x) {
  if (levels == 0) return add_chain(x);
  return st::grad([levels](const st::Tensor& t) { return nested_grad(levels - 1, t); })(x);
}

void AddChain(benchmark::State& state) {
  const int levels = static_cast<int>(state.range(0));
  const st::Tensor x = st::full({}, 0.5, st::kFloat32);
  for (auto _ : state) benchmark::DoNotOptimize(nested_grad(levels, x).impl());
  state.counters["ns/op"] = benchmark::Counter(
      kChain, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

st::Tensor sin_x_squared(const st::Tensor& x) { return x.sin() * x * x; }

void GradCubed(benchmark::State& state) {
  const st::Tensor x = st::full({}, 0.7, st::kFloat32);
  auto third = st::grad(st::grad(st::grad(sin_x_squared)));
  for (auto _ : state) benchmark::DoNotOptimize(third(x).impl());
}

void ScalarFunction(benchmark::State& state) {
  const st::Tensor x = st::full({}, 0.7, st::kFloat32);
  for (auto _ : state) benchmark::DoNotOptimize(sin_x_squared(x).impl());
}

BENCHMARK(MlpBatchGrad)->ArgsProduct({{32, 256}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(AddChain)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);
BENCHMARK(GradCubed)->Unit(benchmark::kMicrosecond);
BENCHMARK(ScalarFunction)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
