// functionalize costs, the workloads of issue 21 (compare with
// bench/peer_functionalize.py, PyTorch 1.13's functorch.experimental.functionalize
// on the same workloads; both together: bench/run_functionalize_comparison.sh).
//   AddChain/<How>     64 out-of-place adds on a [4] tensor: Eager, under one
//                      Functionalize level, under one Vmap level (batch 1); counters
//                      ns/op and ns/op/level = (t - t_eager) / 64, eager timed alongside
//   InplaceChain/<How> the same with y.add_(x) on a clone (Eager, Functionalize: each
//                      add_ becomes an add and a rebinding of the wrapper)
//   SliceUpdates/<How> a mutation-heavy function: 500 rounds of
//                      y.narrow(0, i, 4).mul_(0.5).add_(x.narrow(0, j, 4)) on a clone
//                      of x [64, 16], 1000 in-place ops through slices: Eager,
//                      Functionalize, FunctionalizeViews (Remove::MutationsAndViews);
//                      counter ratio = t / t_eager, eager timed alongside
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <algorithm>
#include <chrono>
#include <functional>

namespace st = strata;

namespace {

constexpr int kChain = 64;

st::Tensor add_chain(const st::Tensor& x) {
  st::Tensor y = x;
  for (int i = 0; i < kChain; ++i) y = y + x;
  return y;
}

st::Tensor inplace_chain(const st::Tensor& x) {
  st::Tensor y = x.clone();
  for (int i = 0; i < kChain; ++i) y.add_(x);
  return y;
}

constexpr int kRounds = 500;

st::Tensor slice_updates(const st::Tensor& x) {
  st::Tensor y = x.clone();
  const st::Tensor half = st::tensor({0.5f}, {});
  for (int i = 0; i < kRounds; ++i) {
    y.narrow(0, (i * 7) % 60, 4).mul_(half).add_(x.narrow(0, i % 60, 4));
  }
  return y;
}

using Fn = std::function<st::Tensor(const st::Tensor&)>;

// Nanoseconds per call of f(x): the best of a few timed batches.
double best_ns(const Fn& f, const st::Tensor& x, int calls) {
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) benchmark::DoNotOptimize(f(x).impl());
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / calls);
  }
  return best;
}

enum How : int64_t { kEager, kFunctionalize, kVmap, kFunctionalizeViews };

Fn transformed(const Fn& f, int64_t how) {
  switch (how) {
    case kFunctionalize: return st::functionalize(f);
    case kFunctionalizeViews: return st::functionalize(f, st::Remove::MutationsAndViews);
    case kVmap: return [f](const st::Tensor& x) { return st::vmap(f)(x.unsqueeze(0)); };
    default: return f;
  }
}

// Times f under `how`; per op and per level against eager f timed alongside.
void run_chain(benchmark::State& state, const Fn& f) {
  const st::Tensor x = st::full({4}, 0.5, st::kFloat32);
  const Fn g = transformed(f, state.range(0));
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(g(x).impl());
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  const double per_op = took.count() / (static_cast<double>(state.iterations()) * kChain);
  state.counters["ns/op"] = per_op;
  if (state.range(0) != kEager) {
    state.counters["ns/op/level"] = per_op - best_ns(f, x, 200) / kChain;
  }
}

void AddChain(benchmark::State& state) { run_chain(state, &add_chain); }
void InplaceChain(benchmark::State& state) { run_chain(state, &inplace_chain); }

void SliceUpdates(benchmark::State& state) {
  const st::Tensor x = st::arange(64 * 16).to(st::kFloat32).reshape({64, 16}) * 0.01;
  const Fn g = transformed(&slice_updates, state.range(0));
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(g(x).impl());
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  const double per_call = took.count() / static_cast<double>(state.iterations());
  state.counters["ratio"] = per_call / best_ns(&slice_updates, x, 5);
}

BENCHMARK(AddChain)->ArgName("how")->Arg(kEager)->Arg(kFunctionalize)->Arg(kVmap);
BENCHMARK(InplaceChain)->ArgName("how")->Arg(kEager)->Arg(kFunctionalize);
BENCHMARK(SliceUpdates)
    ->ArgName("how")
    ->Arg(kEager)
    ->Arg(kFunctionalize)
    ->Arg(kFunctionalizeViews)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
