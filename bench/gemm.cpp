// Float32 GEMM, C[n, n] = A[n, n] @ B[n, n], at n = 256, 512, 1024 and 1 or 2 threads
// (second argument), and small n = 8 ... 128 at 1 thread. Rows, each reporting FLOP/s (2 n^3 per
// product):
//   StrataMm            strata::mm through the dispatcher, output allocated per call
//   StrataMmTransposedA strata::mm(A^T view, B): the transposed operand is read in place
//   EigenGemm           Eigen's GEMM called directly on row-major matrices; its threads are
//                       OpenMP's (this file is built with OpenMP, the library is not)
//   OpenBlasSgemm       cblas_sgemm, threads set with openblas_set_num_threads
//   StrataThin / EigenThin / OpenBlasThin  the MLP layer's thin products (see kThinShapes)
// Target: StrataMm >= 90 % of the better of EigenGemm and OpenBlasSgemm at each size
// and thread count (see bench/README.md for the numbers and the decision).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <strata/strata.h>

#include <Eigen/Core>
#include <iterator>
#include <string>
#include <vector>

#include "bench_support.h"
#include "kernels/cpu/parallel.h"

namespace st = strata;

namespace {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void set_flops(benchmark::State& state, int64_t n) {
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// Values in [-1, 1], row-major.
st::Tensor random_matrix(int64_t n) {
  const RowMajorMatrix values = RowMajorMatrix::Random(n, n);
  return st::tensor(std::vector<float>(values.data(), values.data() + n * n), {n, n});
}

void StrataMm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bench::ThreadLimit threads(state.range(1));
  const st::Tensor a = random_matrix(n);
  const st::Tensor b = random_matrix(n);
  for (auto _ : state) {
    st::Tensor c = st::mm(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_flops(state, n);
}

void StrataMmTransposedA(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bench::ThreadLimit threads(state.range(1));
  const st::Tensor storage = random_matrix(n);
  const st::Tensor a_t(st::make_intrusive<st::TensorImpl>(
      storage.impl()->storage(), st::kFloat32, st::IntArrayRef{n, n}, st::IntArrayRef{1, n}, 0));
  const st::Tensor b = random_matrix(n);
  for (auto _ : state) {
    st::Tensor c = st::mm(a_t, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_flops(state, n);
}

// bmm of `batch` small n x n matrices, 1 thread: the per-matrix overhead.
void StrataBmmSmall(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const int64_t n = state.range(1);
  const bench::ThreadLimit threads(1);
  const RowMajorMatrix values = RowMajorMatrix::Random(batch * n, n);
  const st::Tensor a =
      st::tensor(std::vector<float>(values.data(), values.data() + batch * n * n), {batch, n, n});
  for (auto _ : state) {
    st::Tensor c = st::bmm(a, a);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(batch * n * n * n),
                                                benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(StrataBmmSmall)
    ->Args({4096, 4})
    ->Args({4096, 8})
    ->Args({1024, 16})
    ->Args({256, 32})
    ->ArgNames({"batch", "n"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void EigenGemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  Eigen::setNbThreads(static_cast<int>(state.range(1)));
  const RowMajorMatrix a = RowMajorMatrix::Random(n, n);
  const RowMajorMatrix b = RowMajorMatrix::Random(n, n);
  RowMajorMatrix c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

void OpenBlasSgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  const RowMajorMatrix a = RowMajorMatrix::Random(n, n);
  const RowMajorMatrix b = RowMajorMatrix::Random(n, n);
  RowMajorMatrix c(n, n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

void sizes_and_threads(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (int n : {256, 512, 1024}) b->Args({n, threads});
  }
  b->ArgNames({"n", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// Small products, where per-call overhead decides (Eigen's vs OpenBLAS's).
void small_sizes(benchmark::internal::Benchmark* b) {
  for (int n : {8, 16, 32, 64, 128}) b->Args({n, 1});
  b->ArgNames({"n", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void all_sizes(benchmark::internal::Benchmark* b) {
  small_sizes(b);
  sizes_and_threads(b);
}

// The MLP layer's products (Note [Thin products], kernels/cpu/gemm_thin.cpp), 1 thread:
// x W^T with few rows (W stored [n, k]), and the weight gradient g^T x with a short
// inner dim (g stored [k, m]). Argument: the row of kThinShapes.
struct ThinShape {
  int m, n, k;
  bool a_transposed, b_transposed;
};
constexpr ThinShape kThinShapes[] = {{32, 128, 784, false, true},
                                     {64, 128, 784, false, true},
                                     {256, 128, 784, false, true},
                                     {128, 784, 32, true, false},
                                     {128, 784, 64, true, false}};

struct ThinOperands {
  ThinShape shape;
  RowMajorMatrix a_stored, b_stored;  // as stored: transposed ones as [k, m] / [n, k]
  explicit ThinOperands(int64_t row)
      : shape(kThinShapes[row]),
        a_stored(RowMajorMatrix::Random(shape.a_transposed ? shape.k : shape.m,
                                        shape.a_transposed ? shape.m : shape.k)),
        b_stored(RowMajorMatrix::Random(shape.b_transposed ? shape.n : shape.k,
                                        shape.b_transposed ? shape.k : shape.n)) {}
  void set_flops(benchmark::State& state) const {
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * shape.m * shape.n * shape.k,
                                                  benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::to_string(shape.m) + "x" + std::to_string(shape.k) + " @ " +
                   std::to_string(shape.k) + "x" + std::to_string(shape.n));
  }
};

st::Tensor as_tensor(const RowMajorMatrix& m, bool transposed) {
  const st::Tensor t = st::tensor(std::vector<float>(m.data(), m.data() + m.size()),
                                  {static_cast<int64_t>(m.rows()), static_cast<int64_t>(m.cols())});
  return transposed ? t.t() : t;
}

void StrataThin(benchmark::State& state) {
  const ThinOperands ops(state.range(0));
  const bench::ThreadLimit threads(1);
  const st::Tensor a = as_tensor(ops.a_stored, ops.shape.a_transposed);
  const st::Tensor b = as_tensor(ops.b_stored, ops.shape.b_transposed);
  for (auto _ : state) {
    st::Tensor c = st::mm(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  ops.set_flops(state);
}

void EigenThin(benchmark::State& state) {
  const ThinOperands ops(state.range(0));
  Eigen::setNbThreads(1);
  RowMajorMatrix c(ops.shape.m, ops.shape.n);
  for (auto _ : state) {
    if (ops.shape.a_transposed) {
      c.noalias() = ops.a_stored.transpose() * ops.b_stored;
    } else {
      c.noalias() = ops.a_stored * ops.b_stored.transpose();
    }
    benchmark::DoNotOptimize(c.data());
  }
  ops.set_flops(state);
}

void OpenBlasThin(benchmark::State& state) {
  const ThinOperands ops(state.range(0));
  openblas_set_num_threads(1);
  const ThinShape s = ops.shape;
  RowMajorMatrix c(s.m, s.n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, s.a_transposed ? CblasTrans : CblasNoTrans,
                s.b_transposed ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                ops.a_stored.data(), static_cast<int>(ops.a_stored.cols()), ops.b_stored.data(),
                static_cast<int>(ops.b_stored.cols()), 0.0f, c.data(), s.n);
    benchmark::DoNotOptimize(c.data());
  }
  ops.set_flops(state);
}

void thin_shapes(benchmark::internal::Benchmark* b) {
  for (int row = 0; row < static_cast<int>(std::size(kThinShapes)); ++row) b->Arg(row);
  b->ArgName("shape")->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(StrataThin)->Apply(thin_shapes);
BENCHMARK(EigenThin)->Apply(thin_shapes);
BENCHMARK(OpenBlasThin)->Apply(thin_shapes);

BENCHMARK(StrataMm)->Apply(all_sizes);
BENCHMARK(StrataMmTransposedA)->Apply(sizes_and_threads);
BENCHMARK(EigenGemm)->Apply(all_sizes);
BENCHMARK(OpenBlasSgemm)->Apply(all_sizes);

}  // namespace

BENCHMARK_MAIN();
