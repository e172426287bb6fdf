// conv2d forward and backward (input and weight gradients) on the two convolutions of
// a small MNIST CNN, batch 64, Float32, at 1 and 2 threads:
//   layer 0: 1 -> 32 channels, 3x3, on [64, 1, 28, 28]
//   layer 1: 32 -> 64 channels, 3x3, on [64, 32, 26, 26]
// Compare with PyTorch in the same session: bench/peer_conv2d.py (see bench/README.md).
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include "bench_support.h"
#include "ops/nn_backward.h"

namespace st = strata;
namespace nn = strata::nn;

namespace {

struct Layer {
  int64_t batch, in_channels, size, out_channels, kernel;
  int64_t out_size() const { return size - kernel + 1; }
  // Multiply-adds of the forward (each backward op does as many), times 2.
  double flops() const {
    return 2.0 * batch * out_channels * out_size() * out_size() * in_channels * kernel * kernel;
  }
};

constexpr Layer kLayers[] = {{64, 1, 28, 32, 3}, {64, 32, 26, 64, 3}};

enum class Pass { Forward, BackwardInput, BackwardWeight };

void run(benchmark::State& state, Pass pass) {
  const Layer& l = kLayers[state.range(0)];
  const bench::ThreadLimit threads(state.range(1));
  const st::Tensor input = st::full({l.batch, l.in_channels, l.size, l.size}, 0.5);
  const st::Tensor weight = st::full({l.out_channels, l.in_channels, l.kernel, l.kernel}, 0.25);
  const st::Tensor bias = st::full({l.out_channels}, 0.1);
  const st::Tensor grad_output =
      st::full({l.batch, l.out_channels, l.out_size(), l.out_size()}, 1.0);
  for (auto _ : state) {
    st::Tensor result;
    switch (pass) {
      case Pass::Forward: result = nn::conv2d(input, weight, bias); break;
      case Pass::BackwardInput:
        result = nn::conv2d_backward_input(grad_output, input.sizes(), weight, {1}, {0}, {1}, 1);
        break;
      case Pass::BackwardWeight:
        result = nn::conv2d_backward_weight(grad_output, input, weight.sizes(), {1}, {0}, {1}, 1);
        break;
    }
    benchmark::DoNotOptimize(result.data_ptr());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(l.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void Conv2dForward(benchmark::State& state) { run(state, Pass::Forward); }
void Conv2dBackwardInput(benchmark::State& state) { run(state, Pass::BackwardInput); }
void Conv2dBackwardWeight(benchmark::State& state) { run(state, Pass::BackwardWeight); }

#define CONV_BENCHMARK(fn)             \
  BENCHMARK(fn)                        \
      ->ArgsProduct({{0, 1}, {1, 2}})  \
      ->ArgNames({"layer", "threads"}) \
      ->Unit(benchmark::kMillisecond)  \
      ->UseRealTime()
CONV_BENCHMARK(Conv2dForward);
CONV_BENCHMARK(Conv2dBackwardInput);
CONV_BENCHMARK(Conv2dBackwardWeight);

}  // namespace

BENCHMARK_MAIN();
