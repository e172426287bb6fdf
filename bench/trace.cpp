// trace's costs (issue 22):
//   TraceMlpLoss / EagerMlpLoss          trace(f) of a small MLP loss vs one eager call
//   PassThroughModeMlpLoss/how           the same call under a dispatch mode that only
//                                        passes each call on: the part of trace's cost
//                                        that any dispatch mode pays; how = 0: the mode
//                                        sees boxed calls, 1: typed ones (unboxed, as the
//                                        recorder), 2: it declares passes_on (skipped)
//   TraceVmapGrad / EagerVmapGrad        the same for vmap(grad(loss)), B = 32
//   ReplayGradCubed / EagerGradCubed     grad(grad(grad(sin(x) x^2))) on a 0-dim input
//   ScalarFunction                       f itself, for scale
//   ReplayHessian / EagerHessian         hessian of sum(sin(x) x^2), n = 32
//   ReplayVmapGrad/B / EagerVmapGrad/B   per-sample gradients of the MLP, B = 32, 256
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <memory>
#include <vector>

namespace st = strata;
namespace nn = strata::nn;

namespace {

st::Tensor mlp_loss(const st::Tensor& w1, const st::Tensor& w2, const st::Tensor& x,
                    const st::Tensor& y) {
  const st::Tensor h = nn::linear(x, w1).tanh();
  return nn::mse_loss(nn::linear(h, w2), y);
}

struct Mlp {
  st::Generator gen{1};
  st::Tensor w1 = st::randn({32, 16}, gen);
  st::Tensor w2 = st::randn({8, 32}, gen);
  st::Tensor x(int64_t b) { return st::randn({b, 16}, gen); }
  st::Tensor y(int64_t b) { return st::randn({b, 8}, gen); }
};

const auto per_sample = st::vmap(st::grad(mlp_loss), {.in_dims = {st::none, st::none, 0, 0}});

void EagerMlpLoss(benchmark::State& state) {
  Mlp m;
  const st::Tensor x = m.x(4), y = m.y(4);
  for (auto _ : state) benchmark::DoNotOptimize(mlp_loss(m.w1, m.w2, x, y));
}
void TraceMlpLoss(benchmark::State& state) {
  Mlp m;
  const st::Tensor x = m.x(4), y = m.y(4);
  for (auto _ : state) benchmark::DoNotOptimize(st::trace(mlp_loss)(m.w1, m.w2, x, y));
}
// A dispatch mode that records nothing.
class PassThrough : public st::DispatchMode {
 public:
  explicit PassThrough(int64_t how) : how_(how) {}
  bool takes_typed(const st::OperatorHandle&) const override { return how_ == 1; }
  bool passes_on(const st::OperatorHandle&) const override { return how_ == 2; }

 private:
  int64_t how_;
};

void PassThroughModeMlpLoss(benchmark::State& state) {
  Mlp m;
  const st::Tensor x = m.x(4), y = m.y(4);
  for (auto _ : state) {
    const st::DispatchModeGuard mode(std::make_shared<PassThrough>(state.range(0)));
    benchmark::DoNotOptimize(mlp_loss(m.w1, m.w2, x, y));
  }
}
void EagerVmapGrad(benchmark::State& state) {
  Mlp m;
  const st::Tensor x = m.x(state.range(0)), y = m.y(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(per_sample(m.w1, m.w2, x, y));
}
void TraceVmapGrad(benchmark::State& state) {
  Mlp m;
  const st::Tensor x = m.x(state.range(0)), y = m.y(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(st::trace(per_sample)(m.w1, m.w2, x, y));
}
void ReplayVmapGrad(benchmark::State& state) {
  Mlp m;
  const st::Tensor x = m.x(state.range(0)), y = m.y(state.range(0));
  const st::Graph g = st::trace(per_sample)(m.w1, m.w2, x, y);
  for (auto _ : state) benchmark::DoNotOptimize(g(m.w1, m.w2, x, y));
}

st::Tensor scalar_f(const st::Tensor& x) { return x.sin() * x * x; }
st::Tensor sum_f(const st::Tensor& x) { return (x.sin() * x * x).sum(); }
const auto grad_cubed = st::grad(st::grad(st::grad(scalar_f)));

void ScalarFunction(benchmark::State& state) {
  const st::Tensor x = st::full({}, 0.7);
  for (auto _ : state) benchmark::DoNotOptimize(scalar_f(x));
}
void EagerGradCubed(benchmark::State& state) {
  const st::Tensor x = st::full({}, 0.7);
  for (auto _ : state) benchmark::DoNotOptimize(grad_cubed(x));
}
void ReplayGradCubed(benchmark::State& state) {
  const st::Tensor x = st::full({}, 0.7);
  const st::Graph g = st::trace(grad_cubed)(x).optimized();
  for (auto _ : state) benchmark::DoNotOptimize(g(x));
}
void EagerHessian(benchmark::State& state) {
  const st::Tensor x = st::arange(32, st::kFloat64) * 0.1;
  for (auto _ : state) benchmark::DoNotOptimize(st::hessian(sum_f)(x));
}
void ReplayHessian(benchmark::State& state) {
  const st::Tensor x = st::arange(32, st::kFloat64) * 0.1;
  const st::Graph g = st::trace(st::hessian(sum_f))(x).optimized();
  for (auto _ : state) benchmark::DoNotOptimize(g(x));
}

}  // namespace

BENCHMARK(EagerMlpLoss);
BENCHMARK(PassThroughModeMlpLoss)->ArgName("how")->Arg(0)->Arg(1)->Arg(2);
BENCHMARK(TraceMlpLoss);
BENCHMARK(EagerVmapGrad)->Arg(32);
BENCHMARK(TraceVmapGrad)->Arg(32);
BENCHMARK(ScalarFunction);
BENCHMARK(EagerGradCubed);
BENCHMARK(ReplayGradCubed);
BENCHMARK(EagerHessian);
BENCHMARK(ReplayHessian);
BENCHMARK(EagerVmapGrad)->Arg(256);
BENCHMARK(ReplayVmapGrad)->Arg(32)->Arg(256);
BENCHMARK_MAIN();
