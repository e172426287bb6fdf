// Jacobians and memory (issue 6: jacrev of a function with a 10000 x 1000 Jacobian
// with chunk_size set stays within a few times the Jacobian's size).
//   Jacrev/C   jacrev of y = tanh(W x), W [10000, 1000] and x [1000] Float32, with
//              chunk_size C (0: the whole 10000-row basis at once)
//   Jacfwd/C   jacfwd of the same (1000 input directions)
// Counters: peak_MiB, the resident memory one call adds at its peak
// (bench/bench_support.h); jacobian_MiB, the result's size (38.1 MiB); peak_over_jacobian, their
// ratio. Every benchmark first checks its result against diag(1 - y²) W.
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <functional>
#include <optional>

#include "bench_support.h"

namespace st = strata;

namespace {

// The memory counters of one call of f; left out where the kernel does not let the
// high-water mark be reset.
void count_peak_memory(benchmark::State& state, const std::function<st::Tensor()>& f) {
  st::Tensor jacobian;
  const std::optional<double> peak = bench::peak_memory_mib([&] { jacobian = f(); });
  if (!peak) return;
  const double size = static_cast<double>(jacobian.numel() * 4) / (1024.0 * 1024.0);
  state.counters["peak_MiB"] = *peak;
  state.counters["jacobian_MiB"] = size;
  state.counters["peak_over_jacobian"] = *peak / size;
}

struct Layer {
  st::Tensor w = st::randn({10000, 1000}, st::Generator(1)) * 0.03;
  st::Tensor x = st::randn({1000}, st::Generator(2));
  st::Tensor operator()(const st::Tensor& v) const { return w.matmul(v).tanh(); }
};

template <class MakeJacobian>
void run(benchmark::State& state, MakeJacobian make) {
  const Layer f;
  auto jacobian = make(std::cref(f), st::JacobianOptions{.chunk_size = state.range(0)});
  {
    const st::Tensor y = f(f.x);
    const st::Tensor expected = (1.0 - y * y).unsqueeze(1) * f.w;
    const st::Tensor got = jacobian(f.x);
    const double diff = (got - expected).abs().amax().item<double>();
    if (!(diff <= 1e-5)) {
      state.SkipWithError(("wrong Jacobian: max |diff| " + std::to_string(diff)).c_str());
      return;
    }
  }
  count_peak_memory(state, [&] { return jacobian(f.x); });
  for (auto _ : state) benchmark::DoNotOptimize(jacobian(f.x).impl());
}

void Jacrev(benchmark::State& state) {
  run(state, [](auto f, st::JacobianOptions o) { return st::jacrev(f, o); });
}
void Jacfwd(benchmark::State& state) {
  run(state, [](auto f, st::JacobianOptions o) { return st::jacfwd(f, o); });
}

}  // namespace

BENCHMARK(Jacrev)->Arg(0)->Arg(1000)->Arg(100)->Unit(benchmark::kMillisecond);
BENCHMARK(Jacfwd)->Arg(0)->Arg(100)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
