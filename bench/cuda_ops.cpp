// GPU benchmarks (issue 25), run by scripts/gpu_run_bundle.sh on a machine with a GPU:
//  - add of two 64M Float32 tensors against a device-to-device copy of the same
//    bytes (bytes_per_second counts what each reads and writes);
//  - mm 4096 Float32 against cublasSgemm called directly on the same buffers;
//  - a 64M Float32 sum;
//  - the per-sample gradients of the examples' MLP and CNN by vmap(grad) on the
//    GPU, with the memory one call adds at its peak.
// Each iteration waits for the GPU (cuda_synchronize), so times are the GPU's.
// Without a GPU every benchmark reports an error and does nothing.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <strata/strata.h>

#include <string>

#include "models.h"

namespace st = strata;
using models::Params;

namespace {

bool require_gpu(benchmark::State& state) {
  if (st::cuda_is_available()) return true;
  state.SkipWithError("no CUDA device");
  return false;
}

constexpr int64_t kElements = int64_t{64} << 20;

void CudaAdd64M(benchmark::State& state) {
  if (!require_gpu(state)) return;
  const st::Tensor a = st::full({kElements}, 1.5, st::kFloat32, st::cuda(0));
  const st::Tensor b = st::full({kElements}, 2.5, st::kFloat32, st::cuda(0));
  for (auto _ : state) {
    st::Tensor c = a + b;
    st::cuda_synchronize();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 4 * 3);
}

void CudaDeviceCopy64M(benchmark::State& state) {
  if (!require_gpu(state)) return;
  const st::Tensor a = st::full({kElements}, 1.5, st::kFloat32, st::cuda(0));
  const st::Tensor c = st::empty({kElements}, st::kFloat32, st::cuda(0));
  for (auto _ : state) {
    cudaMemcpy(c.data_ptr<float>(), a.data_ptr<float>(), kElements * 4, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 4 * 2);
}

void CudaBroadcastAdd(benchmark::State& state) {
  if (!require_gpu(state)) return;
  const st::Tensor a = st::full({8192, 8192}, 1.5, st::kFloat32, st::cuda(0));
  const st::Tensor b = st::full({8192}, 2.5, st::kFloat32, st::cuda(0));
  for (auto _ : state) {
    st::Tensor c = a + b;
    st::cuda_synchronize();
  }
  state.SetBytesProcessed(state.iterations() * 8192 * 8192 * 4 * 2);
}

void CudaSum64M(benchmark::State& state) {
  if (!require_gpu(state)) return;
  const st::Tensor a = st::full({kElements}, 1.0, st::kFloat32, st::cuda(0));
  for (auto _ : state) {
    st::Tensor s = a.sum();
    st::cuda_synchronize();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 4);
}

constexpr int64_t kN = 4096;

void CudaMm4096(benchmark::State& state) {
  if (!require_gpu(state)) return;
  const st::Tensor a = st::full({kN, kN}, 0.5, st::kFloat32, st::cuda(0));
  const st::Tensor b = st::full({kN, kN}, 0.25, st::kFloat32, st::cuda(0));
  for (auto _ : state) {
    st::Tensor c = a.mm(b);
    st::cuda_synchronize();
  }
  state.counters["TFLOPS"] = benchmark::Counter(2.0 * kN * kN * kN * state.iterations() / 1e12,
                                                benchmark::Counter::kIsRate);
}

void CublasSgemm4096(benchmark::State& state) {
  if (!require_gpu(state)) return;
  const st::Tensor a = st::full({kN, kN}, 0.5, st::kFloat32, st::cuda(0));
  const st::Tensor b = st::full({kN, kN}, 0.25, st::kFloat32, st::cuda(0));
  const st::Tensor c = st::empty({kN, kN}, st::kFloat32, st::cuda(0));
  cublasHandle_t handle;
  cublasCreate(&handle);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, b.data_ptr<float>(), kN,
                a.data_ptr<float>(), kN, &zero, c.data_ptr<float>(), kN);
    cudaDeviceSynchronize();
  }
  cublasDestroy(handle);
  state.counters["TFLOPS"] = benchmark::Counter(2.0 * kN * kN * kN * state.iterations() / 1e12,
                                                benchmark::Counter::kIsRate);
}

Params on_gpu(const Params& params) {
  Params out;
  for (const auto& [name, value] : params) out.emplace(name, value.to(st::cuda(0)));
  return out;
}

// Per-sample gradients of a model's sample loss by vmap(grad) on the GPU; the
// counter peak_MiB is what one call adds to the allocator's bytes in use at its
// peak (torch.func's peer reports the same of its allocator).
template <class SampleLoss>
void per_sample_grads(benchmark::State& state, const Params& host_params, SampleLoss loss,
                      const st::Tensor& host_x) {
  if (!require_gpu(state)) return;
  const int64_t batch = host_x.size(0);
  const Params params = on_gpu(host_params);
  const st::Tensor x = host_x.to(st::cuda(0));
  const st::Tensor y = models::peer_labels(batch).to(st::cuda(0));
  auto f = st::vmap(st::grad(loss), {.in_dims = {st::none, 0, 0}});
  double peak_mib = 0;
  try {
    st::cuda_synchronize();
    const size_t before = st::cuda_allocator_stats().bytes_in_use;
    st::reset_cuda_allocator_peak();
    f(params, x, y);
    st::cuda_synchronize();
    const size_t peak = st::cuda_allocator_stats().peak_bytes_in_use;
    peak_mib = static_cast<double>(peak - before) / (1 << 20);
  } catch (const st::Error& e) {
    state.SkipWithError((std::string("not on CUDA yet: ") + e.what()).c_str());
    return;
  }
  for (auto _ : state) {
    Params g = f(params, x, y);
    st::cuda_synchronize();
  }
  state.counters["peak_MiB"] = peak_mib;
}

void CudaMlpVmapGrad(benchmark::State& state) {
  per_sample_grads(state, models::mlp_params(), models::mlp_sample_loss,
                   models::det({state.range(0), 784}, 0.37));
}

void CudaCnnVmapGrad(benchmark::State& state) {
  per_sample_grads(state, models::cnn_params(), models::cnn_sample_loss,
                   models::det({state.range(0), 1, 28, 28}, 0.37));
}

}  // namespace

BENCHMARK(CudaAdd64M)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(CudaDeviceCopy64M)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(CudaBroadcastAdd)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(CudaSum64M)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(CudaMm4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(CublasSgemm4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(CudaMlpVmapGrad)->Arg(256)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(CudaCnnVmapGrad)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
