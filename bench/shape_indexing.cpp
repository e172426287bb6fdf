// Shape and indexing ops: the per-call cost of a view (metadata only), and the
// throughput of the copying ops (reshape of a transposed tensor, cat, the gathers
// and scatters, masked_fill) on tensors big enough to run in parallel.
#include <benchmark/benchmark.h>

#include <vector>

#include "strata/strata.h"

namespace st = strata;

namespace {

// Float32 values of the given shape (only the ops under test and factories are used).
st::Tensor values(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<float> data(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = static_cast<float>(i % 97) - 48;
  return st::tensor(data, sizes);
}

// Row indices in [0, bound), spread over the range.
st::Tensor row_indices(int64_t count, int64_t bound) {
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) rows[static_cast<size_t>(i)] = (i * 7919) % bound;
  return st::tensor(rows, {count});
}

void View(benchmark::State& state) {
  const st::Tensor x = values({64, 64});
  for (auto _ : state) benchmark::DoNotOptimize(x.view({4096}));
}
BENCHMARK(View);

void Transpose(benchmark::State& state) {
  const st::Tensor x = values({64, 64});
  for (auto _ : state) benchmark::DoNotOptimize(x.transpose(0, 1));
}
BENCHMARK(Transpose);

void Select(benchmark::State& state) {
  const st::Tensor x = values({64, 64});
  for (auto _ : state) benchmark::DoNotOptimize(x.select(0, 3));
}
BENCHMARK(Select);

void ReshapeOfTransposed(benchmark::State& state) {
  const st::Tensor x = values({1024, 1024}).t();
  for (auto _ : state) benchmark::DoNotOptimize(x.reshape({-1}));
  state.SetBytesProcessed(state.iterations() * x.numel() * 4);
}
BENCHMARK(ReshapeOfTransposed)->UseRealTime();

void CatDim1(benchmark::State& state) {
  const st::Tensor a = values({1024, 512}), b = values({1024, 512});
  for (auto _ : state) benchmark::DoNotOptimize(st::cat({a, b}, 1));
  state.SetBytesProcessed(state.iterations() * 2 * a.numel() * 4);
}
BENCHMARK(CatDim1)->UseRealTime();

void StackSmall(benchmark::State& state) {
  const st::Tensor a = values({16}), b = values({16}), c = values({16});
  for (auto _ : state) benchmark::DoNotOptimize(st::stack({a, b, c}, 0));
}
BENCHMARK(StackSmall);

void IndexSelectRows(benchmark::State& state) {
  const st::Tensor table = values({50000, 128});
  const st::Tensor rows = row_indices(8192, 50000);
  for (auto _ : state) benchmark::DoNotOptimize(table.index_select(0, rows));
  state.SetBytesProcessed(state.iterations() * 8192 * 128 * 4);
}
BENCHMARK(IndexSelectRows)->UseRealTime();

void GatherLastDim(benchmark::State& state) {
  const st::Tensor x = values({1024, 1024});
  const st::Tensor index = row_indices(1024 * 1024, 1024).view({1024, 1024});
  for (auto _ : state) benchmark::DoNotOptimize(x.gather(1, index));
  state.SetBytesProcessed(state.iterations() * x.numel() * 4);
}
BENCHMARK(GatherLastDim)->UseRealTime();

void ScatterAddRows(benchmark::State& state) {
  const st::Tensor self = st::zeros({1024, 256});
  const st::Tensor src = values({8192, 256});
  const st::Tensor index = row_indices(8192, 1024).unsqueeze(1).expand({8192, 256});
  for (auto _ : state) self.scatter_add_(0, index, src);
  state.SetBytesProcessed(state.iterations() * src.numel() * 4);
}
BENCHMARK(ScatterAddRows)->UseRealTime();

void IndexAddRows(benchmark::State& state) {
  const st::Tensor self = st::zeros({1024, 256});
  const st::Tensor source = values({8192, 256});
  const st::Tensor rows = row_indices(8192, 1024);
  for (auto _ : state) self.index_add_(0, rows, source);
  state.SetBytesProcessed(state.iterations() * source.numel() * 4);
}
BENCHMARK(IndexAddRows)->UseRealTime();

void MaskedFill(benchmark::State& state) {
  const st::Tensor x = values({1024, 1024});
  std::vector<bool> bits(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = i % 3 == 0;
  const st::Tensor mask = st::tensor(bits, {1024, 1024});
  for (auto _ : state) benchmark::DoNotOptimize(x.masked_fill(mask, 0.0));
  state.SetBytesProcessed(state.iterations() * x.numel() * 4);
}
BENCHMARK(MaskedFill)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
