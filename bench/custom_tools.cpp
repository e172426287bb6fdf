// What the tools of issue 24 cost:
//   MlpPerSampleGrads/C     vmap(grad(loss)) of a 784-128-10 ReLU MLP over B = 256
//                           samples; C = 1 under a FlopCounter, C = 2 under a
//                           Profiler, C = 0 without
//   GradCubed/C             grad(grad(grad(f))) of f(x) = sin(x) x^2 on a 0-dim tensor
//                           (a small-op workload), with and without the tools
//   SmallFunction/K/G       f(x) = x * x + x on 4 elements; K = 0 plain, K = 1 the
//                           same ops as a custom function with a vjp rule; G = 1
//                           under grad (forward and backward)
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace st = strata;
namespace nn = strata::nn;

namespace {

using Params = std::map<std::string, st::Tensor>;

st::Tensor mlp_loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  st::Tensor h = nn::linear(x, p.at("w1"), p.at("b1")).relu();
  return nn::cross_entropy(nn::linear(h, p.at("w2"), p.at("b2")).unsqueeze(0), y.unsqueeze(0));
}

// For the scope: no mode (0), a FlopCounter (1) or a Profiler (2).
struct MaybeCounting {
  std::optional<st::DispatchModeGuard> guard;
  explicit MaybeCounting(int64_t tool) {
    if (tool == 1) guard.emplace(std::make_shared<st::FlopCounter>());
    if (tool == 2) guard.emplace(std::make_shared<st::Profiler>());
  }
};

void MlpPerSampleGrads(benchmark::State& state) {
  st::Generator gen(1);
  const Params params{{"w1", st::randn({128, 784}, gen) * 0.05},
                      {"b1", st::randn({128}, gen) * 0.1},
                      {"w2", st::randn({10, 128}, gen) * 0.1},
                      {"b2", st::randn({10}, gen) * 0.1}};
  const int64_t batch = 256;
  const st::Tensor xs = st::randn({batch, 784}, gen);
  const st::Tensor ys = st::randint(0, 10, {batch}, gen);
  auto per_sample = st::vmap(st::grad(mlp_loss), {.in_dims = {st::none, 0, 0}});
  for (auto _ : state) {
    const MaybeCounting counting(state.range(0));
    Params g = per_sample(params, xs, ys);
    benchmark::DoNotOptimize(g.at("w1").data_ptr());
  }
}
BENCHMARK(MlpPerSampleGrads)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

void GradCubed(benchmark::State& state) {
  auto f = [](const st::Tensor& x) { return x.sin() * x * x; };
  auto g3 = st::grad(st::grad(st::grad(f)));
  const st::Tensor x = st::full({}, 0.7, st::kFloat64);
  for (auto _ : state) {
    const MaybeCounting counting(state.range(0));
    benchmark::DoNotOptimize(g3(x).data_ptr());
  }
}
BENCHMARK(GradCubed)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

void SmallFunction(benchmark::State& state) {
  using List = std::vector<st::Tensor>;
  const st::CustomFunction custom = st::custom_function(
      [](const List& in) { return List{in[0] * in[0] + in[0]}; },
      {.vjp = [](const List& in, const List&, const List& ct) {
        return List{ct[0] * (in[0] * 2.0 + 1.0)};
      }});
  const bool use_custom = state.range(0) != 0;
  auto f = [&](const st::Tensor& x) {
    return use_custom ? custom({x})[0] : x * x + x;
  };
  const st::Tensor x = st::tensor({0.1, 0.2, 0.3, 0.4});
  if (state.range(1) == 0) {
    for (auto _ : state) benchmark::DoNotOptimize(f(x).data_ptr());
  } else {
    auto g = st::grad([&](const st::Tensor& v) { return f(v).sum(); });
    for (auto _ : state) benchmark::DoNotOptimize(g(x).data_ptr());
  }
}
BENCHMARK(SmallFunction)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
