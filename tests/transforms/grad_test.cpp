// grad, grad_and_value and vjp on real functions: values against closed forms,
// nesting (grad of grad of grad, perturbation confusion, closures), trees, and
// mutation inside a transform.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <map>
#include <string>
#include <thread>

#include "ops/elementwise_backward.h"
#include "tests/test_support.h"

namespace strata {
namespace {

void expect_values(const Tensor& actual, const std::vector<double>& expected, double tol = 1e-10) {
  ASSERT_TRUE(actual.defined());
  std::vector<double> values = actual.to_vector<double>();
  ASSERT_EQ(values.size(), expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(values[i], expected[i], tol * (1 + std::abs(expected[i]))) << "element " << i;
  }
}

void expect_same(const Tensor& a, const Tensor& b, double tol = 1e-10) {
  ASSERT_EQ(a.sizes(), b.sizes());
  expect_values(a, b.to_vector<double>(), tol);
}

Tensor scalar(double v) { return tensor({v}, {}); }

TEST(Grad, CubicSum) {
  Tensor x = tensor({-1.5, 0.0, 2.0, 3.0}, {2, 2});
  Tensor g = grad([](const Tensor& t) { return (t * t * t).sum(); })(x);
  expect_values(g, {3 * 2.25, 0.0, 12.0, 27.0});
  EXPECT_EQ(g.sizes(), x.sizes());
  EXPECT_TRUE(g.impl()->has_storage()) << "gradients leave the transform unwrapped";
}

TEST(Grad, BroadcastAndNonContiguousInputs) {
  Tensor a = arange(6, kFloat64).reshape({2, 3}).t();  // [3, 2], transposed
  Tensor b = tensor({0.5, -2.0}, {2});
  auto f = [](const Tensor& x, const Tensor& y) { return (x * y).sin().sum(); };
  auto [ga, gb] = grad<0, 1>(f)(a, b);
  Tensor expected_a = (a * b).cos() * b;
  Tensor expected_b = ((a * b).cos() * a).sum({0});
  expect_same(ga, expected_a);
  expect_same(gb, expected_b);
}

// d^n/dx^n of sin(x) x^2, by hand.
double third_derivative(double x) {
  return 6 * std::cos(x) - 6 * x * std::sin(x) - x * x * std::cos(x);
}
double second_derivative(double x) {
  return 2 * std::sin(x) + 4 * x * std::cos(x) - x * x * std::sin(x);
}

TEST(Grad, NestedTwiceAndThreeTimes) {
  auto f = [](const Tensor& x) { return x.sin() * x * x; };
  for (double x : {-2.0, 0.0, 0.3, 1.7}) {
    expect_values(grad(grad(f))(scalar(x)), {second_derivative(x)});
    expect_values(grad(grad(grad(f)))(scalar(x)), {third_derivative(x)});
  }
}

TEST(Grad, PerturbationConfusion) {
  // d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1 at every x; a transform that
  // confused the two levels' perturbations would give 2.
  auto outer = [](const Tensor& x) {
    auto inner = [&x](const Tensor& y) { return x + y; };
    return x * grad(inner)(scalar(1.0));
  };
  for (double x : {-3.0, 0.5, 2.0}) expect_values(grad(outer)(scalar(x)), {1.0});
}

TEST(Grad, ClosureCapturingAnOuterTensor) {
  // f(x) = d/dy sum(x * y^2) at y = 3  = 2 * 3 * sum(x)... per element: 6 x;
  // grad over x of sum(6 x) = 6 everywhere. The inner grad sees x as a constant.
  Tensor y0 = tensor({3.0, 3.0}, {2});
  auto f = [&y0](const Tensor& x) {
    Tensor dy = grad([&x](const Tensor& y) { return (x * y * y).sum(); })(y0);
    expect_values(dy, {6 * x.to_vector<double>()[0], 6 * x.to_vector<double>()[1]});
    return dy.sum();
  };
  expect_values(grad(f)(tensor({1.0, -2.0}, {2})), {6.0, 6.0});
  // A plain tensor captured by the function is a constant.
  Tensor c = tensor({2.0, 5.0}, {2});
  expect_values(grad([&c](const Tensor& x) { return (c * x).sum(); })(tensor({1.0, 1.0}, {2})),
                {2.0, 5.0});
}

TEST(Grad, InPlaceOnAFreshLocalTensorInsideNestedGrad) {
  // f(x) = x^3 built by writing into a fresh tensor in place: f'' = 6x.
  auto f = [](const Tensor& x) {
    Tensor t = zeros_like(x);
    t.add_(x * x);
    t.mul_(x);
    return t.sum();
  };
  expect_values(grad(f)(tensor({2.0}, {1})), {12.0});
  expect_values(grad(grad([&](const Tensor& x) { return f(x.unsqueeze(0)); }))(scalar(2.0)),
                {12.0});
}

TEST(Grad, InPlaceOnTheDifferentiatedInput) {
  // x.mul_(x) replaces x by x^2 inside f; the gradient is w.r.t. the original x.
  auto f = [](const Tensor& x) {
    Tensor y = x * 1.0;
    y.mul_(y);
    return y.sum();
  };
  expect_values(grad(f)(tensor({3.0, -1.0}, {2})), {6.0, -2.0});
}

TEST(Grad, SeveralArgnumsAndNumbersAsConstants) {
  auto f = [](const Tensor& a, double k, const Tensor& c) { return (a * c * k).sum(); };
  Tensor a = tensor({1.0, 2.0}, {2});
  Tensor c = tensor({3.0, 4.0}, {2});
  auto [ga, gc] = grad<0, 2>(f)(a, 2.0, c);
  expect_values(ga, {6.0, 8.0});
  expect_values(gc, {2.0, 4.0});
  auto [gc_first, ga_second] = grad<2, 0>(f)(a, 2.0, c);
  expect_same(gc_first, gc);
  expect_same(ga_second, ga);
}

TEST(Grad, GradAndValueAndAux) {
  auto f = [](const Tensor& x) { return (x * x).sum(); };
  Tensor x = tensor({1.0, 2.0, 3.0}, {3});
  auto [g, value] = grad_and_value(f)(x);
  expect_values(g, {2.0, 4.0, 6.0});
  expect_values(value, {14.0});
  EXPECT_TRUE(value.impl()->has_storage());

  auto with_aux = [](const Tensor& x) {
    Tensor y = x.exp();
    return std::pair{y.sum(), std::map<std::string, Tensor>{{"y", y}, {"x2", x * 2.0}}};
  };
  auto [g2, aux] = grad(with_aux, has_aux)(x);
  expect_same(g2, x.exp());
  expect_same(aux.at("y"), x.exp());
  EXPECT_TRUE(aux.at("x2").impl()->has_storage()) << "aux leaves the transform unwrapped";
  auto [g3, value_and_aux] = grad_and_value(with_aux, has_aux)(x);
  expect_same(g3, x.exp());
  expect_same(value_and_aux.first, x.exp().sum());
  expect_same(value_and_aux.second.at("x2"), x * 2.0);
}

TEST(Grad, StatefulFunction) {
  // A mutable lambda keeps its state across calls of the transformed function.
  auto scaled_by_calls = [calls = 0](const Tensor& x) mutable {
    ++calls;
    return (x * static_cast<double>(calls)).sum();
  };
  auto g = grad(scaled_by_calls);
  Tensor x = tensor({1.0, 2.0}, {2});
  expect_values(g(x), {1.0, 1.0});
  expect_values(g(x), {2.0, 2.0});
}

TEST(Grad, OutputNotDependingOnTheInputHasZeroGradient) {
  Tensor x = tensor({1.0, 2.0}, {2});
  expect_values(grad([](const Tensor&) { return scalar(4.0); })(x), {0.0, 0.0});
  expect_values(grad([](const Tensor& t) { return t.sum() * 0.0 + 1.0; })(x), {0.0, 0.0});
}

// x * x gives x one gradient 2 g x (ops/elementwise_binary.cpp, mul_backward);
// a value passed as two arguments is two tensors, each with its own gradient.
TEST(Grad, SquareOfOneTensorAndTwoArgumentsSharingAValue) {
  Tensor x = tensor({-1.5, 0.5, 2.0}, {3});
  expect_values(grad([](const Tensor& t) { return (t * t).sum(); })(x), {-3.0, 1.0, 4.0});
  auto [ga, gb] = grad<0, 1>([](const Tensor& a, const Tensor& b) { return (a * b).sum(); })(x, x);
  expect_values(ga, {-1.5, 0.5, 2.0});
  expect_values(gb, {-1.5, 0.5, 2.0});
  // Second order: sum(grad(sum(u u))(t) * t) = 2 sum(t^2), whose gradient is 4 t.
  auto inner = grad([](const Tensor& u) { return (u * u).sum(); });
  expect_values(grad([&](const Tensor& t) { return (inner(t) * t).sum(); })(x), {-6.0, 2.0, 8.0});
  // x captured by an inner level: a constant there, one tensor at the outer level.
  const Tensor y = tensor({1.0, 1.0, 1.0}, {3});
  auto captured = [&](const Tensor& t) {
    return grad([&](const Tensor& u) { return (t * t * u).sum(); })(y).sum();
  };
  expect_values(grad(captured)(x), {-3.0, 1.0, 4.0});
}

// mul_add(a, b, a, b) is 2 a b (Note [Repeated products]): one gradient per factor.
// Two arguments sharing a value keep their own gradients; a x x x is 2 x^2.
TEST(Grad, MulAddRepeatingItsProduct) {
  Tensor a = tensor({-1.5, 0.5, 2.0}, {3});
  Tensor b = tensor({0.25, -3.0, 1.0}, {3});
  auto repeated = [](const Tensor& u, const Tensor& v) { return mul_add(u, v, u, v).sum(); };
  auto [ga, gb] = grad<0, 1>(repeated)(a, b);
  expect_values(ga, {0.5, -6.0, 2.0});
  expect_values(gb, {-3.0, 1.0, 4.0});
  auto four = [](const Tensor& u, const Tensor& v, const Tensor& p, const Tensor& q) {
    return mul_add(u, v, p, q).sum();
  };
  auto [g0, g1, g2, g3] = grad<0, 1, 2, 3>(four)(a, b, a, b);
  expect_values(g0, {0.25, -3.0, 1.0});
  expect_values(g2, {0.25, -3.0, 1.0});
  expect_values(g1, {-1.5, 0.5, 2.0});
  expect_values(g3, {-1.5, 0.5, 2.0});
  expect_values(grad([](const Tensor& x) { return mul_add(x, x, x, x).sum(); })(a),
                {-6.0, 2.0, 8.0});
  // Second order through the repeated product that x * x differentiates to:
  // d/dt sum(grad(sum(u u u))(t)) = d/dt sum(3 t^2) = 6 t.
  auto inner = grad([](const Tensor& u) { return (u * u * u).sum(); });
  expect_values(grad([&](const Tensor& t) { return inner(t).sum(); })(a), {-9.0, 3.0, 12.0});
}

TEST(Vjp, CallableMoreThanOnceWithTreeOutputs) {
  Tensor x = tensor({1.0, 2.0}, {2});
  Tensor y = tensor({3.0, -1.0}, {2});
  auto f = [](const Tensor& a, const Tensor& b) { return std::tuple{a * b, (a + b).sum()}; };
  auto [out, vjp_fn] = vjp(f, x, y);
  expect_same(std::get<0>(out), x * y);
  expect_values(std::get<1>(out), {5.0});
  for (double s : {1.0, -2.0}) {
    auto [gx, gy] = vjp_fn(std::tuple{tensor({s, 2 * s}, {2}), scalar(10.0)});
    expect_values(gx, {s * 3.0 + 10.0, 2 * s * -1.0 + 10.0});
    expect_values(gy, {s * 1.0 + 10.0, 2 * s * 2.0 + 10.0});
  }
}

// Gradients that meet are summed in place when the backward pass alone holds the
// sum; a cotangent the caller holds, or a gradient handed to several inputs,
// must never be the buffer that is written.
TEST(Vjp, AccumulationLeavesCotangentsAndSharedGradientsIntact) {
  Tensor x = tensor({1.0, -2.0}, {2});
  auto [out, vjp_fn] = vjp([](const Tensor& t) { return t + t + t * t; }, x);
  Tensor cotangent = tensor({1.0, 10.0}, {2});
  for (int rep = 0; rep < 2; ++rep) {
    expect_values(std::get<0>(vjp_fn(cotangent)), {1.0 * (2 + 2 * 1.0), 10.0 * (2 + 2 * -2.0)});
    expect_values(cotangent, {1.0, 10.0});
  }
  Tensor y = tensor({0.5, 3.0}, {2});
  Tensor g = grad([&y](const Tensor& t) { return (t + y + t + t).sum() + (t * y).sum(); })(x);
  expect_values(g, {3.5, 6.0});
  expect_values(y, {0.5, 3.0});
}

// Plain gradients are summed by the CPU kernel directly, but a dispatch mode
// (trace, an op counter) must still see those sums as add_ calls.
TEST(Vjp, AccumulationIsSeenByDispatchModes) {
  Tensor x = tensor({1.0, -2.0}, {2});
  auto f = [](const Tensor& t) { return (t + t + t + t * 3.0).sum(); };
  expect_values(grad(f)(x), {6.0, 6.0});
  std::map<std::string, int> counts;
  {
    DispatchModeGuard mode(std::make_shared<testing::CountingMode>(counts));
    expect_values(grad(f)(x), {6.0, 6.0});
  }
  EXPECT_EQ(counts["strata::add_.Tensor"], 3) << "four gradients of x meet: three sums";
}

TEST(Vjp, OneVjpFunctionUsedBySeveralThreadsAtOnce) {
  Tensor x = tensor({0.2, -0.4, 1.5}, {3});
  auto [out, vjp_fn] = vjp([](const Tensor& t) { return (t.sin() * t).exp(); }, x);
  std::vector<Tensor> cotangents, expected;
  for (int i = 0; i < 4; ++i) {
    cotangents.push_back(tensor({1.0 * i, 2.0, -1.0}, {3}));
    expected.push_back(std::get<0>(vjp_fn(cotangents.back())));
  }
  std::vector<Tensor> results(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 50; ++rep) results[i] = std::get<0>(vjp_fn(cotangents[i]));
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 4; ++i) expect_same(results[i], expected[i]);
}

TEST(Vjp, InsideGradIsDifferentiable) {
  // d/dx of the vjp of sin at x with cotangent 1: d/dx cos(x) = -sin(x).
  auto f = [](const Tensor& x) {
    auto [out, vjp_fn] = vjp([](const Tensor& t) { return t.sin(); }, x);
    return std::get<0>(vjp_fn(ones_like(out))).sum();
  };
  Tensor x = tensor({0.3, 1.1}, {2});
  expect_same(grad(f)(x), -x.sin());
}

struct Mlp {
  Tensor w1, b1, w2, b2;
  std::string name;  // a non-tensor field passes through
};

}  // namespace

template <>
struct TreeFields<Mlp> {
  template <class Self>
  static auto fields(Self& m) {
    return std::tie(m.w1, m.b1, m.w2, m.b2, m.name);
  }
};

namespace {

using Params = std::map<std::string, Tensor>;

Tensor mlp_loss(const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                const Tensor& x, const Tensor& target) {
  Tensor h = nn::linear(x, w1, b1).tanh();
  return nn::mse_loss(nn::linear(h, w2, b2), target);
}

Params make_params(Generator& gen) {
  return {{"w1", randn({5, 4}, gen, kFloat64)},
          {"b1", randn({5}, gen, kFloat64)},
          {"w2", randn({3, 5}, gen, kFloat64)},
          {"b2", randn({3}, gen, kFloat64)}};
}

TEST(Trees, MapOfMlpParametersMatchesPerParameterGradients) {
  Generator gen(7);
  Params p = make_params(gen);
  Tensor x = randn({6, 4}, gen, kFloat64);
  Tensor target = randn({6, 3}, gen, kFloat64);
  auto loss = [&](const Params& q) {
    return mlp_loss(q.at("w1"), q.at("b1"), q.at("w2"), q.at("b2"), x, target);
  };
  Params g = grad(loss)(p);
  ASSERT_EQ(g.size(), p.size());
  auto [g_w1, g_b1, g_w2, g_b2] =
      grad<0, 1, 2, 3>([&](const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
        return mlp_loss(w1, b1, w2, b2, x, target);
      })(p.at("w1"), p.at("b1"), p.at("w2"), p.at("b2"));
  expect_same(g.at("w1"), g_w1);
  expect_same(g.at("b1"), g_b1);
  expect_same(g.at("w2"), g_w2);
  expect_same(g.at("b2"), g_b2);
}

TEST(Trees, UserStructVectorArrayAndPair) {
  Generator gen(3);
  Params p = make_params(gen);
  Mlp m{p.at("w1"), p.at("b1"), p.at("w2"), p.at("b2"), "mlp"};
  Tensor x = randn({2, 4}, gen, kFloat64);
  Tensor target = randn({2, 3}, gen, kFloat64);
  Mlp g = grad([&](const Mlp& q) { return mlp_loss(q.w1, q.b1, q.w2, q.b2, x, target); })(m);
  EXPECT_EQ(g.name, "mlp");
  Params gp = grad([&](const Params& q) {
    return mlp_loss(q.at("w1"), q.at("b1"), q.at("w2"), q.at("b2"), x, target);
  })(p);
  expect_same(g.w1, gp.at("w1"));
  expect_same(g.b2, gp.at("b2"));

  using Tree = std::pair<std::vector<Tensor>, std::array<Tensor, 2>>;
  Tree t{{tensor({1.0, 2.0}, {2}), scalar(3.0)}, {scalar(4.0), tensor({5.0}, {1})}};
  Tree gt = grad([](const Tree& v) {
    return (v.first[0] * v.first[1]).sum() + v.second[0] * v.second[1].sum();
  })(t);
  expect_values(gt.first[0], {3.0, 3.0});
  expect_values(gt.first[1], {3.0});
  expect_values(gt.second[0], {5.0});
  expect_values(gt.second[1], {4.0});
}

TEST(Grad, ReadingValuesInsideGrad) {
  auto f = [](const Tensor& x) {
    EXPECT_DOUBLE_EQ(x.sum().item<double>(), 3.0);
    return (x * x).sum();
  };
  expect_values(grad(f)(tensor({1.0, 2.0}, {2})), {2.0, 4.0});
}

TEST(Grad, ThreadsHaveTheirOwnLayerStacks) {
  auto f = [](const Tensor& x) { return (x.sin() * x * x).sum(); };
  Tensor x = tensor({0.1, 0.7, -1.3}, {3});
  auto second = [&](const Tensor& t) { return grad(f)(t).sum(); };
  Tensor expected = grad(second)(x);
  std::vector<Tensor> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 20; ++rep) {
        results[i] = grad(second)(x);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Tensor& r : results) expect_same(r, expected);
}

// ---- NoGradGuard and stop_gradient (Note [No grad inside a transform]) ----

// (x^3).sum() computed under the guard inside f is a constant to f's grad.
Tensor guarded_cube_plus_square(const Tensor& x) {
  Tensor cube;
  {
    NoGradGuard no_grad;
    cube = (x * x * x).sum();
  }
  return (x * x).sum() + cube;
}

TEST(NoGrad, AGuardInsideTheFunctionStopsRecordingForItsGrad) {
  Tensor x = tensor({-1.5, 0.5, 2.0}, {3});
  expect_values(grad(&guarded_cube_plus_square)(x), {-3.0, 1.0, 4.0});
  // The guard ended with its scope: later ops record again.
  auto after = [](const Tensor& t) {
    { NoGradGuard no_grad; }
    return (t * t).sum();
  };
  expect_values(grad(after)(x), {-3.0, 1.0, 4.0});
}

TEST(NoGrad, AGuardOutsideATransformDoesNotDisableIt) {
  Tensor x = tensor({-1.5, 0.5, 2.0}, {3});
  NoGradGuard no_grad;
  expect_values(grad([](const Tensor& t) { return (t * t * t).sum(); })(x), {6.75, 0.75, 12.0});
  // Inside that grad a guard of its own still works.
  expect_values(grad(&guarded_cube_plus_square)(x), {-3.0, 1.0, 4.0});
}

TEST(NoGrad, AGuardInsideAnInnerFunctionIsConstantToEveryGradAroundIt) {
  Tensor x = tensor({-1.5, 0.5, 2.0}, {3});
  // d/dx of the inner gradient 2x, summed: 2 — the guarded cube adds nothing at either level.
  auto inner_grad_sum = [](const Tensor& t) { return grad(&guarded_cube_plus_square)(t).sum(); };
  expect_values(grad(inner_grad_sum)(x), {2.0, 2.0, 2.0});
}

TEST(NoGrad, AGuardAroundAnInnerGradHidesItFromTheOuterOne) {
  Tensor x = tensor({-1.5, 0.5, 2.0}, {3});
  auto cube_sum = [](const Tensor& t) { return (t * t * t).sum(); };
  auto outer = [&](const Tensor& t) {
    Tensor g;
    {
      NoGradGuard no_grad;
      g = grad(cube_sum)(t);  // a newer level: computed in full
    }
    expect_values(g, {6.75, 0.75, 12.0});
    return t.sum() + g.sum();
  };
  expect_values(grad(outer)(x), {1.0, 1.0, 1.0});
}

TEST(StopGradient, IsAConstantToGradAndJvp) {
  Tensor x = tensor({-1.5, 0.5, 2.0}, {3});
  auto f = [](const Tensor& t) { return t * stop_gradient(t); };
  // d(x * c)/dx = c, with c = x's value.
  expect_values(grad([&](const Tensor& t) { return f(t).sum(); })(x), {-1.5, 0.5, 2.0});
  Tensor v = tensor({1.0, 2.0, 3.0}, {3});
  auto [y, ty] = jvp(f, std::tuple{x}, std::tuple{v});
  expect_values(y, {2.25, 0.25, 4.0});
  expect_values(ty, {-1.5, 1.0, 6.0});
  // Every level: the second derivative of x^2 * c is 2c, not 6x.
  auto first = [](const Tensor& t) {
    return grad([](const Tensor& u) { return (u * u * stop_gradient(u)).sum(); })(t).sum();
  };
  expect_values(grad(first)(x), {-3.0, 1.0, 4.0});
}

TEST(StopGradient, SharesMemoryAndBatchesUnderVmap) {
  Tensor x = tensor({1.0, 2.0}, {2});
  Tensor c = stop_gradient(x);
  EXPECT_EQ(c.data_ptr(), x.data_ptr());
  Tensor xs = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {3, 2});
  auto per_sample = vmap(grad([](const Tensor& t) { return (t * t * stop_gradient(t)).sum(); }));
  // d(x^2 c)/dx = 2 x c = 2 x^2 per element.
  expect_values(per_sample(xs), {2.0, 8.0, 18.0, 32.0, 50.0, 72.0});
}

}  // namespace
}  // namespace strata
