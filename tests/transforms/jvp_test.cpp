// jvp and linearize on real functions: values against closed forms, trees,
// has_aux, nesting with grad (both orders), jvp and vmap, perturbation
// confusion in forward mode, and in-place ops inside jvp.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ops/elementwise_backward.h"
#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;

Tensor scalar(double v) { return tensor({v}, {}); }

// f(x) = sin(x) x^2 and its derivatives, by hand.
Tensor f_sin_sq(const Tensor& x) { return x.sin() * x * x; }
Tensor df_sin_sq(const Tensor& x) { return x.cos() * x * x + x.sin() * x * 2.0; }
Tensor d2f_sin_sq(const Tensor& x) { return x.sin() * 2.0 + x.cos() * x * 4.0 - x.sin() * x * x; }

TEST(Jvp, SinTimesSquareAgainstClosedForm) {
  Tensor x = tensor({-1.5, 0.0, 0.4, 2.0}, {2, 2});
  Tensor t = tensor({1.0, -2.0, 0.5, 3.0}, {2, 2});
  auto [y, ty] = jvp(&f_sin_sq, std::tuple{x}, std::tuple{t});
  EXPECT_TRUE(allclose(y, f_sin_sq(x)));
  EXPECT_TRUE(allclose(ty, df_sin_sq(x) * t));
  EXPECT_TRUE(ty.impl()->has_storage()) << "tangents leave the transform unwrapped";
}

TEST(Jvp, SquareOfOneTensorAndTwoPrimalsSharingAValue) {
  Tensor x = tensor({-1.5, 0.5, 2.0}, {3});
  Tensor t = tensor({1.0, -2.0, 0.25}, {3});
  auto square = [](const Tensor& v) { return v * v; };
  EXPECT_TRUE(allclose(jvp(square, std::tuple{x}, std::tuple{t}).second, x * t * 2.0));
  // The same value as two primals with different tangents: t_a b + a t_b.
  Tensor u = tensor({0.5, 1.0, -1.0}, {3});
  auto product = [](const Tensor& a, const Tensor& b) { return a * b; };
  EXPECT_TRUE(allclose(jvp(product, std::tuple{x, x}, std::tuple{t, u}).second, t * x + x * u));
}

// mul_add(a, b, a, b) is 2 a b (Note [Repeated products]): the tangent
// 2 (t_a b + a t_b) in one pass; the same values with other tangents are four factors.
TEST(Jvp, MulAddRepeatingItsProduct) {
  Tensor a = tensor({-1.5, 0.5, 2.0}, {3});
  Tensor b = tensor({0.25, -3.0, 1.0}, {3});
  Tensor ta = tensor({1.0, -2.0, 0.25}, {3});
  Tensor tb = tensor({0.5, 1.0, -1.0}, {3});
  auto repeated = [](const Tensor& u, const Tensor& v) { return mul_add(u, v, u, v); };
  auto [out, tangent] = jvp(repeated, std::tuple{a, b}, std::tuple{ta, tb});
  EXPECT_TRUE(allclose(out, a * b * 2.0));
  EXPECT_TRUE(allclose(tangent, (ta * b + a * tb) * 2.0));
  auto four = [](const Tensor& u, const Tensor& v, const Tensor& p, const Tensor& q) {
    return mul_add(u, v, p, q);
  };
  const Tensor other = jvp(four, std::tuple{a, b, a, b}, std::tuple{ta, tb, tb, ta}).second;
  EXPECT_TRUE(allclose(other, ta * b + a * tb + tb * b + a * ta));
  // Under hessian the repeated product's primals are vectors and its tangents matrices.
  auto f = [](const Tensor& x) { return (x * x * x).sum(); };
  EXPECT_TRUE(allclose(hessian(f)(a), eye(3, 3, kFloat64) * (a * 6.0)));
}

TEST(Jvp, SeveralPrimalsAndAnOutputWithoutTangent) {
  Tensor a = tensor({0.5, -1.0, 2.0}, {3});
  Tensor b = tensor({1.5, 0.25, -0.75}, {3});
  Tensor ta = tensor({1.0, 2.0, 3.0}, {3});
  Tensor tb = tensor({-1.0, 0.5, 0.0}, {3});
  Tensor constant = tensor({7.0, 8.0}, {2});
  auto f = [&](const Tensor& x, const Tensor& y) {
    return std::tuple{(x * y).exp(), x / y, constant};
  };
  auto [out, tangent] = jvp(f, std::tuple{a, b}, std::tuple{ta, tb});
  EXPECT_TRUE(allclose(std::get<0>(tangent), (a * b).exp() * (ta * b + a * tb)));
  EXPECT_TRUE(allclose(std::get<1>(tangent), ta / b - a * tb / (b * b)));
  EXPECT_TRUE(allclose(std::get<2>(tangent), zeros_like(constant)))
      << "an output that does not depend on the primals has a zero tangent";
  EXPECT_TRUE(allclose(std::get<2>(out), constant));
}

TEST(Jvp, TreesOfParametersAndHasAux) {
  using Params = std::map<std::string, Tensor>;
  Params p{{"w", tensor({1.0, 2.0, -1.0, 0.5}, {2, 2})}, {"b", tensor({0.1, -0.2}, {2})}};
  Params tp{{"w", tensor({0.5, 0.0, 1.0, -1.0}, {2, 2})}, {"b", tensor({1.0, 1.0}, {2})}};
  Tensor x = tensor({0.3, -0.7}, {2});
  auto f = [&](const Params& q) {
    Tensor y = (q.at("w").matmul(x) + q.at("b")).tanh();
    return std::pair{std::vector<Tensor>{y, y.sum()}, std::string("aux")};
  };
  auto [out, tangent, aux] = jvp(f, std::tuple{p}, std::tuple{tp}, has_aux);
  Tensor y = (p.at("w").matmul(x) + p.at("b")).tanh();
  Tensor expected = (1.0 - y * y) * (tp.at("w").matmul(x) + tp.at("b"));
  ASSERT_EQ(tangent.size(), 2u);
  EXPECT_TRUE(allclose(out[0], y));
  EXPECT_TRUE(allclose(tangent[0], expected));
  EXPECT_TRUE(allclose(tangent[1], expected.sum()));
  EXPECT_EQ(aux, "aux");
}

// d/dx [x * d/dy (x + y)] = 1 at any x: the inner level's tangent of y must not
// pick up the outer level's tangent of x (which would give 2).
TEST(Jvp, PerturbationConfusion) {
  for (double x0 : {-1.0, 0.0, 3.0}) {
    auto f = [](const Tensor& x) {
      auto inner = [&](const Tensor& y) { return x + y; };
      Tensor d_dy = jvp(inner, std::tuple{scalar(2.0)}, std::tuple{scalar(1.0)}).second;
      return x * d_dy;
    };
    Tensor d = jvp(f, std::tuple{scalar(x0)}, std::tuple{scalar(1.0)}).second;
    EXPECT_NEAR(d.item<double>(), 1.0, 1e-12) << "at x = " << x0;
  }
}

TEST(Jvp, ForwardOverForwardGivesTheSecondDerivative) {
  for (double x0 : {-2.0, 0.3, 1.7}) {
    auto first = [](const Tensor& x) {
      return jvp(&f_sin_sq, std::tuple{x}, std::tuple{ones_like(x)}).second;
    };
    Tensor d2 = jvp(first, std::tuple{scalar(x0)}, std::tuple{scalar(1.0)}).second;
    EXPECT_TRUE(allclose(d2, d2f_sin_sq(scalar(x0))));
  }
}

// jvp of grad: the Hessian-vector product.
TEST(Jvp, OfGradIsTheHessianVectorProduct) {
  Tensor x = tensor({-1.0, 0.5, 2.0}, {3});
  Tensor v = tensor({1.0, -2.0, 0.5}, {3});
  auto loss = [](const Tensor& a) { return f_sin_sq(a).sum() + (a * a).sum().log1p(); };
  Tensor hv = jvp(grad(loss), std::tuple{x}, std::tuple{v}).second;
  const double s = (x * x).sum().item<double>();
  Tensor expected =
      d2f_sin_sq(x) * v + v * (2.0 / (1 + s)) - x * ((x * v).sum() * (4.0 / ((1 + s) * (1 + s))));
  EXPECT_TRUE(allclose(hv, expected));
}

// grad of a function that uses jvp inside: d/dx sum(J(x) v) for f = sin(x) x^2.
TEST(Jvp, GradOfJvp) {
  Tensor x = tensor({-1.0, 0.5, 2.0}, {3});
  Tensor v = tensor({1.0, -2.0, 0.5}, {3});
  auto directional = [&](const Tensor& a) {
    return jvp(&f_sin_sq, std::tuple{a}, std::tuple{v}).second.sum();
  };
  EXPECT_TRUE(allclose(grad(directional)(x), d2f_sin_sq(x) * v));
}

// vmap of jvp over tangents gives Jacobian columns; over primals, per-sample jvps.
TEST(Jvp, UnderVmap) {
  Tensor x = tensor({0.2, -0.4, 1.1}, {3});
  Tensor w = tensor({1.0, 2.0, 0.0, -1.0, 0.5, 0.25, 3.0, 1.0, -2.0}, {3, 3});
  auto f = [&](const Tensor& a) { return w.matmul(a).tanh(); };
  auto column = [&](const Tensor& t) { return jvp(f, std::tuple{x}, std::tuple{t}).second; };
  Tensor columns = vmap(column)(eye(3, std::nullopt, kFloat64));  // row k: J e_k
  Tensor y = f(x);
  Tensor jacobian = (1.0 - y * y).unsqueeze(1) * w;
  EXPECT_TRUE(allclose(columns.t(), jacobian));

  Tensor xs = tensor({0.2, -0.4, 1.1, 0.0, 0.3, -0.9}, {2, 3});
  Tensor ts = tensor({1.0, 0.0, -1.0, 0.5, 0.5, 0.5}, {2, 3});
  auto per_sample = [&](const Tensor& a, const Tensor& t) {
    return jvp(f, std::tuple{a}, std::tuple{t}).second;
  };
  Tensor batched = vmap(per_sample)(xs, ts);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(allclose(batched.select(0, i), per_sample(xs.select(0, i), ts.select(0, i))));
  }
}

TEST(Jvp, InPlaceOnAFreshLocalTensor) {
  Tensor x = tensor({0.5, -1.0, 2.0}, {3});
  Tensor t = tensor({1.0, 2.0, -1.0}, {3});
  auto f = [](const Tensor& a) {
    Tensor y = zeros_like(a);
    y.copy_(a);
    y.mul_(a);
    y.add_(a.sin());
    return y;
  };
  Tensor ty = jvp(f, std::tuple{x}, std::tuple{t}).second;
  EXPECT_TRUE(allclose(ty, (x * 2.0 + x.cos()) * t));
}

// The tangent of a broadcast sum is an expanded tensor; a view of the result
// must still work (views of tangents reshape, whatever their layout).
TEST(Jvp, ViewOfABroadcastTangent) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}, {4, 1});
  Tensor b = tensor({0.5, -0.5, 1.5}, {3});
  auto f = [&](const Tensor& x) { return (x + b).view({12}); };
  Tensor ty = jvp(f, std::tuple{a}, std::tuple{ones_like(a)}).second;
  EXPECT_TRUE(allclose(ty, ones({12}, kFloat64)));
}

TEST(Linearize, MatchesJvpAndEvaluatesTheFunctionOnce) {
  Tensor x = tensor({-1.0, 0.5, 2.0}, {3});
  int calls = 0;
  auto f = [&](const Tensor& a) {
    ++calls;
    return std::pair{f_sin_sq(a), (a * a).sum()};
  };
  auto [out, jvp_fn] = linearize(f, x);
  EXPECT_TRUE(allclose(out.first, f_sin_sq(x)));
  for (Tensor t : {tensor({1.0, 0.0, 0.0}, {3}), tensor({0.5, -2.0, 1.5}, {3})}) {
    auto [ty, ts] = jvp_fn(t);
    EXPECT_TRUE(allclose(ty, df_sin_sq(x) * t));
    EXPECT_TRUE(allclose(ts, (x * t).sum() * 2.0));
  }
  EXPECT_EQ(calls, 1) << "jvp_fn reuses the linearization instead of re-running f";
}

}  // namespace
}  // namespace strata
