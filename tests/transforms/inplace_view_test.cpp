// In-place writes through views, and to a base after views were taken, under grad,
// jvp, vmap and their compositions: PyTorch's semantics (a write to a view updates
// its base's history; a view taken earlier sees a later write to its base). The
// expected values are closed forms worked out by hand in each test's comment.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>

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

// y = x.clone(); y0 = y[0]; y *= y; y0 is now x0^2, so d(y0)/dx = [2 x0, 0, 0].
Tensor view_then_inplace_on_base(const Tensor& x) {
  Tensor y = x.clone();
  Tensor y0 = y.select(0, 0);
  y.mul_(y);
  return y0;
}

TEST(InplaceView, GradSeesAWriteToTheBaseThroughAnEarlierView) {
  Tensor x = tensor({3.0, -1.0, 2.0}, {3});
  Tensor g = grad([](const Tensor& t) { return view_then_inplace_on_base(t).sum(); })(x);
  expect_values(g, {6.0, 0.0, 0.0});
}

TEST(InplaceView, JvpSeesAWriteToTheBaseThroughAnEarlierView) {
  Tensor x = tensor({3.0, -1.0, 2.0}, {3});
  Tensor t = tensor({0.5, 1.0, 1.0}, {3});
  auto [y, ty] = jvp(&view_then_inplace_on_base, std::tuple{x}, std::tuple{t});
  expect_values(y, {9.0});
  expect_values(ty, {2 * 3.0 * 0.5});
}

TEST(InplaceView, VmapOfJvpSeesAWriteToTheBaseThroughAnEarlierView) {
  Tensor xs = tensor({3.0, -1.0, 2.0, 1.5, 4.0, 0.0}, {2, 3});
  Tensor ts = tensor({0.5, 1.0, 1.0, 2.0, 1.0, 1.0}, {2, 3});
  auto per_sample = [](const Tensor& x, const Tensor& t) {
    return jvp(&view_then_inplace_on_base, std::tuple{x}, std::tuple{t}).second;
  };
  expect_values(vmap(per_sample)(xs, ts), {2 * 3.0 * 0.5, 2 * 1.5 * 2.0});
}

// x = zeros(3); x[0:2] = y; sum(x * x) = y0^2 + y1^2: the Jacobian of x * x w.r.t. y
// is [[2 y0, 0], [0, 2 y1], [0, 0]].
Tensor write_into_fresh_zeros(const Tensor& y) {
  Tensor x = zeros({3}, kFloat64);
  x.narrow(0, 0, 2).copy_(y);
  return x * x;
}

TEST(InplaceView, GradThroughACopyIntoANarrowOfFreshZeros) {
  Tensor y = tensor({1.5, -2.0}, {2});
  expect_values(grad([](const Tensor& t) { return write_into_fresh_zeros(t).sum(); })(y),
                {3.0, -4.0});
}

TEST(InplaceView, JacrevAndJacfwdThroughACopyIntoANarrowOfFreshZeros) {
  Tensor y = tensor({1.5, -2.0}, {2});
  const std::vector<double> expected{3.0, 0.0, 0.0, -4.0, 0.0, 0.0};
  Tensor jr = jacrev(&write_into_fresh_zeros)(y);
  ASSERT_EQ(jr.sizes().vec(), (std::vector<int64_t>{3, 2}));
  expect_values(jr, expected);
  expect_values(jacfwd(&write_into_fresh_zeros)(y), expected);
}

// y = x.clone(); y[0] *= x[1]; sum(y * y) = x0^2 x1^2 + x1^2 + x2^2.
Tensor write_through_select(const Tensor& x) {
  Tensor y = x.clone();
  y.select(0, 0).mul_(x.select(0, 1));
  return (y * y).sum();
}

std::vector<double> write_through_select_grad(double x0, double x1, double x2) {
  return {2 * x0 * x1 * x1, 2 * x0 * x0 * x1 + 2 * x1, 2 * x2};
}

TEST(InplaceView, GradThroughAWriteToASelect) {
  Tensor x = tensor({3.0, -1.0, 2.0}, {3});
  expect_values(grad(&write_through_select)(x), write_through_select_grad(3.0, -1.0, 2.0));
}

TEST(InplaceView, HessianThroughAWriteToASelect) {
  // d2/dx2 of x0^2 x1^2 + x1^2 + x2^2.
  const double x0 = 3.0, x1 = -1.0;
  Tensor h = hessian(&write_through_select)(tensor({x0, x1, 2.0}, {3}));
  expect_values(h, {2 * x1 * x1, 4 * x0 * x1, 0, 4 * x0 * x1, 2 * x0 * x0 + 2, 0, 0, 0, 2});
}

TEST(InplaceView, JvpThroughAWriteToASelect) {
  Tensor x = tensor({3.0, -1.0, 2.0}, {3});
  Tensor t = tensor({1.0, 0.5, -2.0}, {3});
  const std::vector<double> g = write_through_select_grad(3.0, -1.0, 2.0);
  auto [y, ty] = jvp(&write_through_select, std::tuple{x}, std::tuple{t});
  expect_values(y, {9.0 + 1.0 + 4.0});
  expect_values(ty, {g[0] * 1.0 + g[1] * 0.5 + g[2] * -2.0});
}

TEST(InplaceView, VmapOfGradThroughAWriteToASelect) {
  Tensor xs = tensor({3.0, -1.0, 2.0, 0.5, 2.0, -1.0}, {2, 3});
  std::vector<double> expected = write_through_select_grad(3.0, -1.0, 2.0);
  for (double v : write_through_select_grad(0.5, 2.0, -1.0)) expected.push_back(v);
  expect_values(vmap(grad(&write_through_select))(xs), expected);
}

TEST(InplaceView, GradThroughACopyIntoASliceOfAClone) {
  // z = w.clone(); z[1:3] = y; sum(z * w) with w = [1, 2, 3]: the gradient is w[1:3].
  auto f = [](const Tensor& y) {
    Tensor w = tensor({1.0, 2.0, 3.0}, {3});
    Tensor z = w.clone();
    z.slice(0, 1, 3).copy_(y);
    return (z * w).sum();
  };
  expect_values(grad(f)(tensor({5.0, 7.0}, {2})), {2.0, 3.0});
}

TEST(InplaceView, WriteToAViewOfAViewReachesTheRoot) {
  // y = x.clone(); y.view(2, 2)[1][0] *= 3: y2 becomes 3 x2; sum(y * y) has gradient
  // [2 x0, 2 x1, 18 x2, 2 x3].
  auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    y.view({2, 2}).select(0, 1).select(0, 0).mul_(tensor({3.0}, {}));
    return (y * y).sum();
  };
  expect_values(grad(f)(tensor({1.0, 2.0, 3.0, 4.0}, {4})), {2.0, 4.0, 54.0, 8.0});
}

TEST(InplaceView, OtherViewsOfTheBaseSeeTheWrite) {
  // y = x.clone(); a = y[0:2]; b = y[1:3]; a *= 2: b is now [2 x1, x2];
  // sum(b * b) = 4 x1^2 + x2^2.
  auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    Tensor a = y.slice(0, 0, 2);
    Tensor b = y.slice(0, 1, 3);
    a.mul_(tensor({2.0}, {}));
    return (b * b).sum();
  };
  Tensor x = tensor({1.0, -3.0, 2.0}, {3});
  expect_values(grad(f)(x), {0.0, -24.0, 4.0});
  auto [y, ty] = jvp(f, std::tuple{x}, std::tuple{tensor({1.0, 1.0, 1.0}, {3})});
  expect_values(y, {36.0 + 4.0});
  expect_values(ty, {-24.0 + 4.0});
}

TEST(InplaceView, WriteThroughAViewOfACapturedTensorIsRefused) {
  Tensor outer = zeros({3}, kFloat64);
  auto f = [&outer](const Tensor& y) {
    outer.select(0, 0).copy_(y.sum());
    return (outer * outer).sum();
  };
  EXPECT_THROW(grad(f)(tensor({1.0, 2.0}, {2})), Error);
  EXPECT_THROW(vjp(f, tensor({1.0, 2.0}, {2})), Error);
  EXPECT_THROW(jvp(f, std::tuple{tensor({1.0, 2.0}, {2})}, std::tuple{tensor({1.0, 1.0}, {2})}),
               Error);
  expect_values(outer, {0.0, 0.0, 0.0});
}


TEST(InplaceView, WriteThroughAnExpandedViewIsRefusedUnderGradAndJvp) {
  // The three elements of y.expand({3}) are one memory location: a write through
  // it has no single region of y to land in (PyTorch errors too; pytorch#153861
  // is the silent case of this under functionalize).
  auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    y.expand({3}).mul_(tensor({1.0, 2.0, 3.0}, {3}));
    return y.sum();
  };
  Tensor x = tensor({2.0}, {1});
  const std::string message = testing::error_message([&] { grad(f)(x); });
  testing::expect_contains(message, {"mul_", "expand or as_strided", "grad level"});
  EXPECT_THROW(jvp(f, std::tuple{x}, std::tuple{tensor({1.0}, {1})}), Error);
}

TEST(InplaceView, WritesThroughViewsOfAFreshBaseGiveEachIterationsHistory) {
  // y = zeros_like(x); y[i] = x[i] * (i + 1) for each i, through select: y = x * [1, 2, 3],
  // so d sum(y * y) / dx = 2 x [1, 4, 9].
  auto f = [](const Tensor& x) {
    Tensor y = zeros_like(x);
    for (int64_t i = 0; i < 3; ++i) {
      y.select(0, i).copy_(x.select(0, i) * static_cast<double>(i + 1));
    }
    return (y * y).sum();
  };
  expect_values(grad(f)(tensor({1.0, -2.0, 0.5}, {3})), {2.0, -16.0, 9.0});
  Tensor xs = tensor({1.0, -2.0, 0.5, 3.0, 1.0, -1.0}, {2, 3});
  expect_values(vmap(grad(f))(xs), {2.0, -16.0, 9.0, 6.0, 8.0, -18.0});
}

}  // namespace
}  // namespace strata
