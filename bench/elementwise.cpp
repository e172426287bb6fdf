// Bandwidth of the elementwise driver (issue: Elementwise). Rows, Float32, args
// {elements, threads}; bytes/s counts every byte read plus every byte written, so
// a row's GB/s divided by Memcpy's at the same args is its share of the copy
// bandwidth (target for binary ops: >= 70 % at 16M elements):
//   Memcpy    std::memcpy of one buffer into another (2 buffers of traffic), split
//             into the same chunks as the kernels so it uses the same threads
//   Add, Mul  st::add / st::mul, output allocated per call (3 buffers)
//   AddInPlace a.add_(b): the same traffic with no allocation
//   Exp       x.exp() (2 buffers; Eigen's SIMD exp); also at 100 elements (a tail)
//   ExpStrided x.exp() of a step-2 slice
//   Add8Elements  end-to-end latency of st::add on two 8-element tensors
//   Random/rand, Random/randn  st::rand / st::randn of n Float32 values (items/s: draws per second)
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <cstring>
#include <optional>

#include "bench_support.h"

namespace st = strata;

namespace {

constexpr int64_t kFloatBytes = sizeof(float);

st::Tensor filled(int64_t n, double value) { return st::full({n}, value, st::kFloat32); }

void Memcpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bench::ThreadLimit limit(state.range(1));
  st::Tensor src = filled(n, 1.0);
  st::Tensor dst = filled(n, 0.0);
  const char* from = static_cast<const char*>(src.data_ptr());
  char* to = static_cast<char*>(dst.data_ptr());
  for (auto _ : state) {
    st::cpu::parallel_for(0, n, st::cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
      std::memcpy(to + begin * kFloatBytes, from + begin * kFloatBytes,
                  static_cast<size_t>((end - begin) * kFloatBytes));
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * kFloatBytes);
}

template <class Op>
void run_binary(benchmark::State& state, Op op) {
  const int64_t n = state.range(0);
  const bench::ThreadLimit limit(state.range(1));
  st::Tensor a = filled(n, 1.5);
  st::Tensor b = filled(n, 2.0);
  for (auto _ : state) {
    st::Tensor c = op(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 3 * n * kFloatBytes);
}

void Add(benchmark::State& state) {
  run_binary(state, [](const st::Tensor& a, const st::Tensor& b) { return st::add(a, b); });
}

void Mul(benchmark::State& state) {
  run_binary(state, [](const st::Tensor& a, const st::Tensor& b) { return st::mul(a, b); });
}

void AddInPlace(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bench::ThreadLimit limit(state.range(1));
  st::Tensor a = filled(n, 1.5);
  st::Tensor b = filled(n, 0.0);
  for (auto _ : state) {
    a.add_(b);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * n * kFloatBytes);
}

void Exp(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bench::ThreadLimit limit(state.range(1));
  st::Tensor x = filled(n, 0.5);
  for (auto _ : state) {
    st::Tensor y = x.exp();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * kFloatBytes);
}

// x.exp() on every other element of a 2n buffer: the strided row, which gathers
// each packet's inputs (Note [One code path per element]).
void ExpStrided(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bench::ThreadLimit limit(state.range(1));
  st::Tensor x = filled(2 * n, 0.5).slice(0, 0, std::nullopt, 2);
  for (auto _ : state) {
    st::Tensor y = x.exp();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * kFloatBytes);
}

void Add8Elements(benchmark::State& state) {
  st::Tensor a = filled(8, 1.5);
  st::Tensor b = filled(8, 2.0);
  for (auto _ : state) {
    st::Tensor c = st::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
}

using Draw = st::Tensor (*)(st::IntArrayRef, const st::Generator&, std::optional<st::ScalarType>);

void Random(benchmark::State& state, Draw draw) {
  const int64_t n = state.range(0);
  const bench::ThreadLimit limit(state.range(1));
  const st::Generator gen(1);
  for (auto _ : state) {
    st::Tensor y = draw({n}, gen, st::kFloat32);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void sizes_and_threads(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{1} << 20, int64_t{1} << 24}) {
    for (int64_t threads : {1, 2}) b->Args({n, threads});
  }
  b->ArgNames({"n", "threads"})->UseRealTime();
}

BENCHMARK(Memcpy)->Apply(sizes_and_threads);
BENCHMARK(Add)->Apply(sizes_and_threads);
BENCHMARK(Mul)->Apply(sizes_and_threads);
BENCHMARK(AddInPlace)->Apply(sizes_and_threads);
BENCHMARK(Exp)->Apply(sizes_and_threads);
BENCHMARK(ExpStrided)->Args({1 << 20, 1})->ArgNames({"n", "threads"})->UseRealTime();
BENCHMARK(Exp)->Args({100, 1})->Args({96, 1})->Args({4, 1})->ArgNames({"n", "threads"})->UseRealTime();
BENCHMARK(Add8Elements);
BENCHMARK_CAPTURE(Random, rand, static_cast<Draw>(&st::rand))->Args({1 << 17, 1})->UseRealTime();
BENCHMARK_CAPTURE(Random, randn, static_cast<Draw>(&st::randn))
    ->Args({1 << 17, 1})->Args({1 << 17, 2})->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
