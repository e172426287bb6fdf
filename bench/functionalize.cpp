// functionalize costs, the workloads of issue 21 (compare with
// bench/peer_functionalize.py, PyTorch 1.13's functorch.experimental.functionalize
// on the same workloads; both together: bench/run_functionalize_comparison.sh).
//   AddChain/how:H     64 out-of-place adds on a [4] tensor: eager (H = 0), under
//                      one functionalize level (1), under one vmap level (2, batch 1);
//                      the script's per-level cost is (t_H - t_0) / 64, CPU times
//   InplaceChain/how:H the same with y.add_(x) on a clone (0, 1: each add_ becomes
//                      an add and a rebinding of the wrapper)
//   SliceUpdates/how:H a mutation-heavy function: 500 rounds of
//                      y.narrow(0, i, 4).mul_(0.5).add_(x.narrow(0, j, 4)) on a clone
//                      of x [64, 16], 1000 in-place ops through slices: 0, 1, and 3
//                      (Remove::MutationsAndViews); the script divides by how:0
#include <benchmark/benchmark.h>
#include <strata/strata.h>

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
  const st::Tensor half = st::full({}, 0.5, st::kFloat32);
  for (int i = 0; i < kRounds; ++i) {
    y.narrow(0, (i * 7) % 60, 4).mul_(half).add_(x.narrow(0, i % 60, 4));
  }
  return y;
}

using Fn = std::function<st::Tensor(const st::Tensor&)>;

enum How : int64_t { kEager, kFunctionalize, kVmap, kFunctionalizeViews };

Fn transformed(const Fn& f, int64_t how) {
  switch (how) {
    case kFunctionalize: return st::functionalize(f);
    case kFunctionalizeViews: return st::functionalize(f, st::Remove::MutationsAndViews);
    case kVmap: return [f](const st::Tensor& x) { return st::vmap(f)(x.unsqueeze(0)); };
    default: return f;
  }
}

void run(benchmark::State& state, const Fn& f, const st::Tensor& x) {
  const Fn g = transformed(f, state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(g(x).impl());
}

void AddChain(benchmark::State& state) { run(state, &add_chain, st::full({4}, 0.5, st::kFloat32)); }
void InplaceChain(benchmark::State& state) {
  run(state, &inplace_chain, st::full({4}, 0.5, st::kFloat32));
}
void SliceUpdates(benchmark::State& state) {
  run(state, &slice_updates, st::arange(64 * 16).to(st::kFloat32).reshape({64, 16}) * 0.01);
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
