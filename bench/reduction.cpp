// Reduction throughput (issue: reductions). Rows report bytes of input read per
// second of wall time; the first argument is the thread count (0: TBB's default).
//   Memcpy16M        std::memcpy of the 64 MB the sums read: the memory-bandwidth bar
//   SumAll16M        x.sum() over 16M float32 values (split groups, blocked summation);
//                    SumAll16MUnaligned: the same starting one element off alignment
//   SumDim0_4096     x.sum({0}) of a 4096x4096 float32 tensor (the column loop)
//   SumDim1_4096     x.sum({1}) of the same (one contiguous row per output element)
//   AmaxDim0/1_4096, ArgmaxDim1_4096, VarDim1_4096: other reducers on the same loops
//   SumAll64         x.sum() of 64 values: the fixed cost per call
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <cstring>

#include "bench_support.h"
#include "kernels/cpu/parallel.h"

namespace st = strata;

namespace {

constexpr int64_t k16M = int64_t{1} << 24;
constexpr int64_t kSide = 4096;

template <class F>
void run_reduction(benchmark::State& state, const st::Tensor& x, F&& f) {
  const bench::ThreadLimit threads(state.range(0));
  for (auto _ : state) {
    st::Tensor out = f(x);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * x.numel() * static_cast<int64_t>(sizeof(float)));
}

// Varied values, so argmax's search for the first maximum is not trivially at 0.
const st::Tensor& square_input() {
  static const st::Tensor x = [] {
    st::Tensor t = st::empty({kSide, kSide}, st::kFloat32);
    float* data = t.data_ptr<float>();
    for (int64_t i = 0; i < t.numel(); ++i) data[i] = static_cast<float>(i * 7919 % 10007);
    return t;
  }();
  return x;
}

void Memcpy16M(benchmark::State& state) {
  const st::Tensor src = st::ones({k16M}, st::kFloat32);
  st::Tensor dst = st::zeros({k16M}, st::kFloat32);
  for (auto _ : state) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), k16M * sizeof(float));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * k16M * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(Memcpy16M)->UseRealTime()->Unit(benchmark::kMillisecond);

void SumAll16M(benchmark::State& state) {
  const st::Tensor x = st::ones({k16M}, st::kFloat32);
  run_reduction(state, x, [](const st::Tensor& t) { return t.sum(); });
}
BENCHMARK(SumAll16M)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

// The same values starting one element past a 64-byte boundary (a slice): summed
// in place in the order an aligned row takes (Note [Sums do not depend on the address]).
void SumAll16MUnaligned(benchmark::State& state) {
  const st::Tensor x = st::ones({k16M + 1}, st::kFloat32).narrow(0, 1, k16M);
  run_reduction(state, x, [](const st::Tensor& t) { return t.sum(); });
}
BENCHMARK(SumAll16MUnaligned)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

void SumDim0_4096(benchmark::State& state) {
  run_reduction(state, square_input(), [](const st::Tensor& t) { return t.sum({0}); });
}
BENCHMARK(SumDim0_4096)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

void SumDim1_4096(benchmark::State& state) {
  run_reduction(state, square_input(), [](const st::Tensor& t) { return t.sum({1}); });
}
BENCHMARK(SumDim1_4096)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

void AmaxDim0_4096(benchmark::State& state) {
  run_reduction(state, square_input(), [](const st::Tensor& t) { return t.amax({0}); });
}
BENCHMARK(AmaxDim0_4096)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

void AmaxDim1_4096(benchmark::State& state) {
  run_reduction(state, square_input(), [](const st::Tensor& t) { return t.amax({1}); });
}
BENCHMARK(AmaxDim1_4096)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

void ArgmaxDim1_4096(benchmark::State& state) {
  run_reduction(state, square_input(), [](const st::Tensor& t) { return t.argmax(1); });
}
BENCHMARK(ArgmaxDim1_4096)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

void VarDim1_4096(benchmark::State& state) {
  run_reduction(state, square_input(), [](const st::Tensor& t) { return t.var({1}); });
}
BENCHMARK(VarDim1_4096)->Arg(1)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

// The fixed cost of a reduction: dispatch, dim checks, output allocation, loop setup.
void SumAll64(benchmark::State& state) {
  const st::Tensor x = st::ones({64}, st::kFloat32);
  for (auto _ : state) {
    st::Tensor out = x.sum();
    benchmark::DoNotOptimize(out.data_ptr());
  }
}
BENCHMARK(SumAll64);

}  // namespace

BENCHMARK_MAIN();
