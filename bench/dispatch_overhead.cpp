// Per-call cost of the dispatcher (issue: Foundation). Rows, in ns per call:
//   NoopTypedHandle   a kernel that does nothing, through a typed handle (target <= 10 ns)
//   Add1Element       strata::add of two 1-element Float32 tensors, output allocated
//   Add1ElementBoxed  the same add through the boxed path (Stack of IValues)
//   Add1ElementNoDispatcher  the CPU kernel called directly: the dispatcher's share is the
//                     difference to Add1Element
//   AddInPlace1Element  a.add_(b): no allocation
//   Add4096           scale reference: 4096 elements
//   MakeEmptyTensor   allocation of a 1-element output alone
// Compare Add1Element with libtorch's at::add (../shared/peers/torch/dispatch_overhead.cpp),
// run side by side by bench/run_dispatch_comparison.sh.
#include <benchmark/benchmark.h>

#include <strata/strata.h>

#include "kernels/cpu/elementwise.h"
#include "tensor/shape_inference.h"

namespace st = strata;

namespace {

void noop_kernel(const st::Tensor&) {}

STRATA_LIBRARY(bench, m) { m.def("noop(Tensor x) -> ()"); }
STRATA_LIBRARY_IMPL(bench, CPU, m) { m.impl("noop", &noop_kernel); }

void NoopTypedHandle(benchmark::State& state) {
  auto op = st::Dispatcher::singleton().findSchemaOrThrow("bench::noop", "").typed<void(const st::Tensor&)>();
  st::Tensor x = st::ones({1});
  for (auto _ : state) op.call(x);
}
BENCHMARK(NoopTypedHandle);

void Add1Element(benchmark::State& state) {
  st::Tensor a = st::ones({1});
  st::Tensor b = st::full({1}, 2.0);
  for (auto _ : state) {
    st::Tensor c = st::add(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(Add1Element);

void Add1ElementBoxed(benchmark::State& state) {
  auto op = st::Dispatcher::singleton().findSchemaOrThrow("strata::add", "Tensor");
  st::Tensor a = st::ones({1});
  st::Tensor b = st::full({1}, 2.0);
  st::Stack stack;
  stack.reserve(3);
  for (auto _ : state) {
    stack.clear();
    stack.emplace_back(a);
    stack.emplace_back(b);
    stack.emplace_back(st::Scalar(1));
    op.call_boxed(stack);
    benchmark::DoNotOptimize(stack.data());
  }
}
BENCHMARK(Add1ElementBoxed);

void Add1ElementNoDispatcher(benchmark::State& state) {
  st::Tensor a = st::ones({1});
  st::Tensor b = st::full({1}, 2.0);
  for (auto _ : state) {
    st::Tensor c = st::make_empty_tensor(st::broadcast_shapes(a.sizes(), b.sizes(), "add"),
                                         st::result_type(a, b), a.device(), "add");
    st::cpu::add_kernel(c, a, b, 1);
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(Add1ElementNoDispatcher);

void AddInPlace1Element(benchmark::State& state) {
  st::Tensor a = st::ones({1});
  st::Tensor b = st::full({1}, 2.0);
  for (auto _ : state) a.add_(b);
}
BENCHMARK(AddInPlace1Element);

void Add4096(benchmark::State& state) {
  st::Tensor a = st::ones({4096});
  st::Tensor b = st::ones({4096});
  for (auto _ : state) {
    st::Tensor c = st::add(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(Add4096);

void MakeEmptyTensor(benchmark::State& state) {
  for (auto _ : state) {
    st::Tensor c = st::make_empty_tensor({1}, st::kFloat32, st::kCPU, "bench");
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(MakeEmptyTensor);

}  // namespace

BENCHMARK_MAIN();
