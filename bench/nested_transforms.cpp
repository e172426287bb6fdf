// Nested function transforms, the workloads of issue 6, on the inputs of
// ../shared/peers/torch/bench_nested.py (compare with bench/peer_nested.py, which runs
// PyTorch 1.13's functorch on the same functions; both side by side, as a table and a
// plot: bench/run_nested_comparison.sh). Float32; the last argument T is the number of
// threads.
//   Hessian/N/T            st::hessian of f(x) = sum(sin(x) x^2) + log1p(sum(x^2)), x in R^N
//   HessianClosedForm/N/T  its analytic Hessian (the floor)
//   GradCubed/T            grad(grad(grad(f))) of f(x) = sin(x) x^2 at the 0-dim x = 0.7
//   ScalarFunction/T       that f alone
//   VmapVmap/T             vmap(vmap(g)) of g(a) = sin(a) a + a a over a 64 x 64 input
//   VmapRows/T, EagerG/T   vmap(g) over its rows; g on the whole input
//   Jacrev/T, Jacfwd/T     the Jacobian of y = tanh(W2 tanh(W1 x + b1) + b2), 64 -> 64 -> 64
//   VmapJacrev/T           vmap(jacrev) of it over 32 inputs
//   JacobianAnalytic/T     diag(1 - y^2) W2 diag(1 - h^2) W1 (the floor)
//   DepthEager, DepthVmap/L, DepthGrad/L
//                          one 10-op function of a 0-dim sample, eagerly and under L
//                          nested vmaps (batch 2 each) or L nested grads; 1 thread
//   VmapGrad               vmap(grad) of sum(mlp(x)) over 32 inputs (profile only)
// Every benchmark first checks its result (see `verified`): a wrong one is reported as
// an error, with no time, so a broken transform cannot show up as a fast number.
//
// `nested_transforms --profile=NAME [--json]` instead runs one call of workload NAME
// (after one warm-up call) under st::Profiler and prints, per op and transform level,
// its calls, time, FLOPs and loop-fallback hits (Note [Profiling a nested transform]);
// NAME is one of those listed by `--profile=list`.
#include <benchmark/benchmark.h>
#include <strata/strata.h>

#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_support.h"
#include "models.h"

namespace st = strata;
using models::det;

namespace {

// Whether `got` matches `want` (shape, and values within models::agreement's Float32
// tolerance); otherwise the benchmark is marked failed with what went wrong.
bool verified(benchmark::State& state, const std::string& what, const st::Tensor& got,
              const st::Tensor& want) {
  std::string error;
  if (got.sizes() != want.sizes()) {
    error = what + ": wrong shape";
  } else if (const models::Agreement a = models::agreement(got, want); !a.ok) {
    error = what + ": wrong values (max |diff| " + std::to_string(a.max_abs_diff) + ")";
  }
  if (error.empty()) return true;
  state.SkipWithError(error.c_str());
  return false;
}

template <class F>
void time_calls(benchmark::State& state, F&& call) {
  for (auto _ : state) benchmark::DoNotOptimize(call().impl());
}

// --- the Hessian ---

st::Tensor f_hess(const st::Tensor& x) { return (x.sin() * x * x).sum() + (x * x).sum().log1p(); }

// diag(2 sin x + 4 x cos x - x^2 sin x) from the first term; with s = |x|^2,
// 2 I / (1 + s) - 4 x x^T / (1 + s)^2 from the second.
st::Tensor hessian_closed_form(const st::Tensor& x) {
  const st::Tensor s1 = (x * x).sum() + 1.0;
  const st::Tensor d = 2.0 * x.sin() + 4.0 * x * x.cos() - x * x * x.sin() + 2.0 / s1;
  return st::eye(x.sizes()[0], std::nullopt, st::kFloat32) * d - 4.0 * x.outer(x) / (s1 * s1);
}

void Hessian(benchmark::State& state) {
  const bench::ThreadLimit threads(state.range(1));
  const st::Tensor x = det({state.range(0)}, 0.37);
  auto hessian = st::hessian(f_hess);
  if (!verified(state, "hessian", hessian(x), hessian_closed_form(x))) return;
  time_calls(state, [&] { return hessian(x); });
}

void HessianClosedForm(benchmark::State& state) {
  const bench::ThreadLimit threads(state.range(1));
  const st::Tensor x = det({state.range(0)}, 0.37);
  time_calls(state, [&] { return hessian_closed_form(x); });
}

// --- grad(grad(grad(f))) on a 0-dim input ---

st::Tensor sin_x_squared(const st::Tensor& x) { return x.sin() * x * x; }

void GradCubed(benchmark::State& state) {
  const bench::ThreadLimit threads(state.range(0));
  const st::Tensor x = st::full({}, 0.7, st::kFloat32);
  auto third = st::grad(st::grad(st::grad(sin_x_squared)));
  const st::Tensor closed_form = -x.cos() * x * x - 6.0 * x.sin() * x + 6.0 * x.cos();
  if (!verified(state, "grad(grad(grad(f)))", third(x), closed_form)) return;
  time_calls(state, [&] { return third(x); });
}

void ScalarFunction(benchmark::State& state) {
  const bench::ThreadLimit threads(state.range(0));
  const st::Tensor x = st::full({}, 0.7, st::kFloat32);
  time_calls(state, [&] { return sin_x_squared(x); });
}

// --- vmap(vmap(g)) on 64 x 64 ---

st::Tensor g4(const st::Tensor& a) { return a.sin() * a + a * a; }

template <class F>
void run_g4(benchmark::State& state, const std::string& what, F g) {
  const bench::ThreadLimit threads(state.range(0));
  const st::Tensor x = det({64, 64}, 0.37);
  if (!verified(state, what, g(x), g4(x))) return;
  time_calls(state, [&] { return g(x); });
}

void VmapVmap(benchmark::State& state) { run_g4(state, "vmap(vmap(g))", st::vmap(st::vmap(g4))); }
void VmapRows(benchmark::State& state) { run_g4(state, "vmap(g)", st::vmap(g4)); }
void EagerG(benchmark::State& state) { run_g4(state, "g", g4); }

// --- Jacobians of a tanh MLP ---

struct TanhMlp {
  st::Tensor w1 = det({64, 64}, 0.61) / 8.0, b1 = det({64}, 0.23) * 0.1;
  st::Tensor w2 = det({64, 64}, 0.79) / 8.0, b2 = det({64}, 0.41) * 0.1;

  st::Tensor operator()(const st::Tensor& x) const {
    return (w2.matmul((w1.matmul(x) + b1).tanh()) + b2).tanh();
  }
  st::Tensor analytic_jacobian(const st::Tensor& x) const {
    const st::Tensor h = (w1.matmul(x) + b1).tanh();
    const st::Tensor y = (w2.matmul(h) + b2).tanh();
    return ((1.0 - y * y).unsqueeze(1) * w2).matmul((1.0 - h * h).unsqueeze(1) * w1);
  }
};

template <class MakeJacobian>
void run_jacobian(benchmark::State& state, const std::string& what, MakeJacobian make) {
  const bench::ThreadLimit threads(state.range(0));
  const TanhMlp mlp;
  const st::Tensor x = det({64}, 0.37);
  auto jacobian = make([&mlp](const st::Tensor& t) { return mlp(t); });
  if (!verified(state, what, jacobian(x), mlp.analytic_jacobian(x))) return;
  time_calls(state, [&] { return jacobian(x); });
}

void Jacrev(benchmark::State& state) {
  run_jacobian(state, "jacrev", [](auto f) { return st::jacrev(f); });
}
void Jacfwd(benchmark::State& state) {
  run_jacobian(state, "jacfwd", [](auto f) { return st::jacfwd(f); });
}

void VmapJacrev(benchmark::State& state) {
  const bench::ThreadLimit threads(state.range(0));
  const TanhMlp mlp;
  const st::Tensor xs = det({32, 64}, 0.37);
  auto jacobians = st::vmap(st::jacrev([&mlp](const st::Tensor& t) { return mlp(t); }));
  std::vector<st::Tensor> each;
  for (int64_t i = 0; i < xs.sizes()[0]; ++i)
    each.push_back(mlp.analytic_jacobian(xs.select(0, i)));
  if (!verified(state, "vmap(jacrev)", jacobians(xs), st::stack(each, 0))) return;
  time_calls(state, [&] { return jacobians(xs); });
}

void JacobianAnalytic(benchmark::State& state) {
  const bench::ThreadLimit threads(state.range(0));
  const TanhMlp mlp;
  const st::Tensor x = det({64}, 0.37);
  time_calls(state, [&] { return mlp.analytic_jacobian(x); });
}

// --- depth: one function under 1..4 nested vmaps or grads ---

// Nine elementwise ops and a sum (of a 0-dim sample: the identity, so that the same
// function can be nested under grad).
st::Tensor nine_ops(const st::Tensor& x) {
  const st::Tensor y = ((x.sin() * x + x).cos().square() - x) * 0.5;
  return y.tanh().exp();
}
st::Tensor ten_ops(const st::Tensor& x) { return nine_ops(x).sum(); }

using Fn = std::function<st::Tensor(const st::Tensor&)>;

template <class Transform>
Fn nested(int levels, Transform transform) {
  Fn f = ten_ops;
  for (int i = 0; i < levels; ++i) f = transform(f);
  return f;
}

void DepthEager(benchmark::State& state) {
  const bench::ThreadLimit threads(1);
  const st::Tensor x = st::full({}, 0.7, st::kFloat32);
  time_calls(state, [&] { return ten_ops(x); });
}

// Samples of x's 2^L values, batched by L vmaps.
void DepthVmap(benchmark::State& state) {
  const bench::ThreadLimit threads(1);
  const int levels = static_cast<int>(state.range(0));
  const st::Tensor x = det(st::Shape(std::vector<int64_t>(static_cast<size_t>(levels), 2)), 0.37);
  const Fn f = nested(levels, [](const Fn& g) -> Fn { return st::vmap(g); });
  if (!verified(state, "nested vmap", f(x), nine_ops(x))) return;
  time_calls(state, [&] { return f(x); });
}

// The L-th derivative at 0.7. It is checked in Float64 against central differences of
// the (L-1)-th, which DepthGrad/(L-1) checks in turn (the 0-th is the function itself).
void DepthGrad(benchmark::State& state) {
  const bench::ThreadLimit threads(1);
  const int levels = static_cast<int>(state.range(0));
  const Fn f = nested(levels, [](const Fn& g) -> Fn { return st::grad(g); });
  const Fn below = nested(levels - 1, [](const Fn& g) -> Fn { return st::grad(g); });
  const double step = 1e-4;
  const auto at = [](double v) { return st::full({}, v, st::kFloat64); };
  const st::Tensor differences = (below(at(0.7 + step)) - below(at(0.7 - step))) / (2 * step);
  if (!verified(state, "nested grad (Float64)", f(at(0.7)), differences)) return;
  const st::Tensor x = st::full({}, 0.7, st::kFloat32);
  time_calls(state, [&] { return f(x); });
}

// --- profiles ---

using Call = std::function<st::Tensor()>;

// One call of each workload, for --profile (the inputs of the benchmarks above).
std::map<std::string, Call> profiled_workloads() {
  const st::Tensor x32 = det({32}, 0.37);
  const st::Tensor x0 = st::full({}, 0.7, st::kFloat32);
  const st::Tensor x64 = det({64, 64}, 0.37);
  const auto mlp = std::make_shared<TanhMlp>();
  const Fn mlp_fn = [mlp](const st::Tensor& t) { return (*mlp)(t); };
  const st::Tensor v64 = det({64}, 0.37);
  const st::Tensor xs = det({32, 64}, 0.37);
  std::map<std::string, Call> workloads{
      {"Hessian", [f = st::hessian(f_hess), x32] { return f(x32); }},
      {"HessianClosedForm", [x32] { return hessian_closed_form(x32); }},
      {"ScalarFunction", [x0] { return sin_x_squared(x0); }},
      {"EagerG", [x64] { return g4(x64); }},
      {"JacobianAnalytic", [mlp, v64] { return mlp->analytic_jacobian(v64); }},
      {"DepthEager", [x0] { return ten_ops(x0); }},
      {"GradCubed", [f = st::grad(st::grad(st::grad(sin_x_squared))), x0] { return f(x0); }},
      {"VmapVmap", [f = st::vmap(st::vmap(g4)), x64] { return f(x64); }},
      {"VmapRows", [f = st::vmap(g4), x64] { return f(x64); }},
      {"Jacrev", [f = st::jacrev(mlp_fn), v64] { return f(v64); }},
      {"Jacfwd", [f = st::jacfwd(mlp_fn), v64] { return f(v64); }},
      {"VmapJacrev", [f = st::vmap(st::jacrev(mlp_fn)), xs] { return f(xs); }},
      {"VmapGrad",
       [f = st::vmap(st::grad([mlp_fn](const st::Tensor& t) { return mlp_fn(t).sum(); })), xs] {
         return f(xs);
       }},
  };
  for (int levels = 1; levels <= 4; ++levels) {
    const st::Tensor x = det(st::Shape(std::vector<int64_t>(static_cast<size_t>(levels), 2)), 0.37);
    workloads["DepthVmap" + std::to_string(levels)] =
        [f = nested(levels, [](const Fn& g) -> Fn { return st::vmap(g); }), x] { return f(x); };
    workloads["DepthGrad" + std::to_string(levels)] =
        [f = nested(levels, [](const Fn& g) -> Fn { return st::grad(g); }), x0] { return f(x0); };
  }
  return workloads;
}

int profile(const std::string& name, bool json) {
  const std::map<std::string, Call> workloads = profiled_workloads();
  const auto it = workloads.find(name);
  if (it == workloads.end()) {
    std::cerr << (name == "list" ? "" : "no workload named '" + name + "'; ") << "workloads:";
    for (const auto& [known, call] : workloads) std::cerr << " " << known;
    std::cerr << "\n";
    return name == "list" ? 0 : 2;
  }
  it->second();  // warm-up: caches and allocator pools, outside the profile
  auto profiler = std::make_shared<st::Profiler>();
  {
    const st::DispatchModeGuard guard(profiler);
    it->second();
  }
  if (json) {
    std::cout << "{\"workload\": \"" << name << "\", \"profile\": " << profiler->to_json() << "}\n";
  } else {
    std::cout << name << "\n" << profiler->to_string();
  }
  return 0;
}

constexpr auto kUs = benchmark::kMicrosecond;
BENCHMARK(Hessian)->ArgsProduct({{32, 256}, {1, 2}})->Unit(kUs);
BENCHMARK(HessianClosedForm)->ArgsProduct({{32, 256}, {1, 2}})->Unit(kUs);
BENCHMARK(GradCubed)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(ScalarFunction)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(VmapVmap)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(VmapRows)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(EagerG)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(Jacrev)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(Jacfwd)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(VmapJacrev)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(JacobianAnalytic)->DenseRange(1, 2)->Unit(kUs);
BENCHMARK(DepthEager)->Unit(kUs);
BENCHMARK(DepthVmap)->DenseRange(1, 4)->Unit(kUs);
BENCHMARK(DepthGrad)->DenseRange(1, 4)->Unit(kUs);

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> profiled;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--profile=", 0) == 0) profiled = arg.substr(10);
    json = json || arg == "--json";
  }
  if (profiled) return profile(*profiled, json);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
