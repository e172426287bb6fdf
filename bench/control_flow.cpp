// Control flow's costs (issue 23):
//   ScanRnn / LoopRnn                  a tanh RNN cell (hidden 32, input 16) over 256
//                                      steps: st::scan vs the same C++ for-loop
//   ScanRnnGrad / LoopRnnGrad          grad of the summed outputs w.r.t. the weights
//   VmapNewton/B / LoopNewton/B        Newton's sqrt with per-lane trip counts (2 to
//                                      ~40 steps): vmap(while_loop) vs while_loop per lane
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <cmath>
#include <utility>
#include <vector>

namespace st = strata;

namespace {

constexpr int64_t kSteps = 256, kHidden = 32, kInput = 16;

struct Rnn {
  st::Generator gen{3};
  st::Tensor w = st::randn({kHidden, kHidden}, gen, st::kFloat64) * 0.1;
  st::Tensor u = st::randn({kHidden, kInput}, gen, st::kFloat64) * 0.1;
  st::Tensor h0 = st::zeros({kHidden}, st::kFloat64);
  st::Tensor xs = st::randn({kSteps, kInput}, gen, st::kFloat64);
};

st::Tensor cell(const st::Tensor& w, const st::Tensor& u, const st::Tensor& h, const st::Tensor& x) {
  return (st::matmul(w, h) + st::matmul(u, x)).tanh();
}

st::Tensor scan_rnn(const st::Tensor& w, const st::Tensor& u, const st::Tensor& h0, const st::Tensor& xs) {
  return st::scan(
             [&](const st::Tensor& h, const st::Tensor& x) {
               const st::Tensor next = cell(w, u, h, x);
               return std::pair{next, next};
             },
             h0, xs)
      .second;
}

st::Tensor loop_rnn(const st::Tensor& w, const st::Tensor& u, const st::Tensor& h0, const st::Tensor& xs) {
  st::Tensor h = h0;
  std::vector<st::Tensor> ys;
  ys.reserve(kSteps);
  for (int64_t t = 0; t < xs.size(0); ++t) {
    h = cell(w, u, h, xs.select(0, t));
    ys.push_back(h);
  }
  return st::stack(ys, 0);
}

void ScanRnn(benchmark::State& state) {
  Rnn r;
  for (auto _ : state) benchmark::DoNotOptimize(scan_rnn(r.w, r.u, r.h0, r.xs));
}
void LoopRnn(benchmark::State& state) {
  Rnn r;
  for (auto _ : state) benchmark::DoNotOptimize(loop_rnn(r.w, r.u, r.h0, r.xs));
}
void ScanRnnGrad(benchmark::State& state) {
  Rnn r;
  auto loss = [&](const st::Tensor& w, const st::Tensor& u) { return scan_rnn(w, u, r.h0, r.xs).sum(); };
  for (auto _ : state) benchmark::DoNotOptimize(st::grad<0, 1>(loss)(r.w, r.u));
}
void LoopRnnGrad(benchmark::State& state) {
  Rnn r;
  auto loss = [&](const st::Tensor& w, const st::Tensor& u) { return loop_rnn(w, u, r.h0, r.xs).sum(); };
  for (auto _ : state) benchmark::DoNotOptimize(st::grad<0, 1>(loss)(r.w, r.u));
}

// Newton's iteration for sqrt(a) from x = a, until |x^2 - a| < 1e-10 * a: lanes
// of a in [1, 1e12] take from 1 to ~40 steps.
st::Tensor newton(const st::Tensor& a) {
  using Carry = std::pair<st::Tensor, st::Tensor>;
  return st::while_loop(
             [&](const Carry& c) { return (c.first * c.first - c.second).abs() > c.second * 1e-10; },
             [](const Carry& c) { return Carry{(c.first + c.second / c.first) * 0.5, c.second}; },
             Carry{a, a})
      .first;
}

st::Tensor lanes(int64_t b) {
  std::vector<double> a;
  for (int64_t i = 0; i < b; ++i) a.push_back(1.0 + std::pow(10.0, 12.0 * static_cast<double>(i) / static_cast<double>(b)));
  return st::tensor(a, {b});
}

void VmapNewton(benchmark::State& state) {
  const st::Tensor a = lanes(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(st::vmap(newton)(a));
}
void LoopNewton(benchmark::State& state) {
  const st::Tensor a = lanes(state.range(0));
  for (auto _ : state) {
    std::vector<st::Tensor> out;
    for (int64_t i = 0; i < a.size(0); ++i) out.push_back(newton(a.select(0, i)));
    benchmark::DoNotOptimize(st::stack(out, 0));
  }
}

}  // namespace

BENCHMARK(ScanRnn)->Unit(benchmark::kMicrosecond);
BENCHMARK(LoopRnn)->Unit(benchmark::kMicrosecond);
BENCHMARK(ScanRnnGrad)->Unit(benchmark::kMicrosecond);
BENCHMARK(LoopRnnGrad)->Unit(benchmark::kMicrosecond);
BENCHMARK(VmapNewton)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(LoopNewton)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
