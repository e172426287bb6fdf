// scaled_dot_product_attention on [B, H, L, E] = [32, 4, L, 32], Float32, L = 64 and
// 128, without and with the causal mask, at 1 and 2 threads:
//   AttentionForward/L/causal/T   the forward alone
//   AttentionGrad/L/causal/T      grad of sum(sdpa(q, k, v)) w.r.t. q, k and v
// Compare with PyTorch in the same session: bench/peer_attention.py (see bench/README.md).
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <tuple>

#include "bench_support.h"

namespace st = strata;
namespace nn = strata::nn;

namespace {

constexpr int64_t kBatch = 32, kHeads = 4, kEmbed = 32;

struct Inputs {
  st::Tensor q, k, v;
  explicit Inputs(int64_t length) {
    st::Generator gen(26);
    q = st::randn({kBatch, kHeads, length, kEmbed}, gen);
    k = st::randn({kBatch, kHeads, length, kEmbed}, gen);
    v = st::randn({kBatch, kHeads, length, kEmbed}, gen);
  }
};

void AttentionForward(benchmark::State& state) {
  const Inputs in(state.range(0));
  const bool causal = state.range(1) != 0;
  const bench::ThreadLimit threads(state.range(2));
  for (auto _ : state) {
    const st::Tensor out = nn::scaled_dot_product_attention(in.q, in.k, in.v, std::nullopt, causal);
    benchmark::DoNotOptimize(out.data_ptr());
  }
}

void AttentionGrad(benchmark::State& state) {
  const Inputs in(state.range(0));
  const bool causal = state.range(1) != 0;
  const bench::ThreadLimit threads(state.range(2));
  auto loss = [causal](const st::Tensor& q, const st::Tensor& k, const st::Tensor& v) {
    return nn::scaled_dot_product_attention(q, k, v, std::nullopt, causal).sum();
  };
  auto g = st::grad<0, 1, 2>(loss);
  for (auto _ : state) {
    const auto grads = g(in.q, in.k, in.v);
    benchmark::DoNotOptimize(std::get<0>(grads).data_ptr());
  }
}

void attention_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"L", "causal", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
  for (int64_t threads : {1, 2}) {
    for (int64_t length : {64, 128}) {
      for (int64_t causal : {0, 1}) b->Args({length, causal, threads});
    }
  }
}

BENCHMARK(AttentionForward)->Apply(attention_args);
BENCHMARK(AttentionGrad)->Apply(attention_args);

}  // namespace

BENCHMARK_MAIN();
