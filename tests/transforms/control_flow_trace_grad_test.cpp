// cond traced inside grad, vjp and jacrev (Note [Control flow traced inside
// grad]): the forward and the backward are each one cond node, so a replay
// takes both from its own data. Expected values are worked out by hand.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <string>
#include <tuple>

#include "tests/test_support.h"

namespace st = strata;

namespace {

using st::testing::allclose;
using st::testing::count_ops;
using st::testing::error_message;
using st::testing::expect_contains;

// sum(x * x^2) = sum(x^3) when x sums above 0, else sum(sin x - x^2); the
// branches capture z = x^2, so half of the gradient flows through the capture.
st::Tensor capturing_loss(const st::Tensor& x) {
  const st::Tensor z = x.square();
  return st::cond(
      x.sum() > 0.0, [&z](const st::Tensor& a) { return (a * z).sum(); },
      [&z](const st::Tensor& a) { return (a.sin() - z).sum(); }, x);
}

// 3 x^2, or cos x - 2 x.
st::Tensor capturing_loss_grad(const st::Tensor& x) {
  return x.sum().item<double>() > 0.0 ? x.square() * 3.0 : x.cos() - x * 2.0;
}

TEST(ControlFlowTraceGrad, GradOfCondWithACaptureReplaysBothBranches) {
  const st::Tensor x = st::tensor({0.5, 1.0, -0.25}, {3});
  for (st::TraceMode mode : {st::TraceMode::Real, st::TraceMode::Fake}) {
    const st::Graph g = st::trace(st::grad(capturing_loss), {.mode = mode})(x);
    // The forward cond and its backward cond.
    EXPECT_EQ(count_ops(g.op_names(), "strata::cond"), 2) << g.to_string();
    for (const st::Tensor& input : {x, -x, x * 3.0, st::tensor({-1.0, 0.5, 0.25}, {3})}) {
      EXPECT_TRUE(allclose(g(input).at(0), capturing_loss_grad(input)))
          << input.sum().item<double>();
    }
  }
  // Traced from the other branch.
  const st::Graph g = st::trace(st::grad(capturing_loss))(-x);
  EXPECT_TRUE(allclose(g(x).at(0), capturing_loss_grad(x)));
  EXPECT_TRUE(allclose(g(-x).at(0), capturing_loss_grad(-x)));
}

// x * x when x sums above 0, else sin x.
st::Tensor square_or_sin(const st::Tensor& x) {
  return st::cond(
      x.sum() > 0.0, [](const st::Tensor& a) { return a * a; },
      [](const st::Tensor& a) { return a.sin(); }, x);
}

TEST(ControlFlowTraceGrad, VjpAndJacrevOfCond) {
  const st::Tensor x = st::tensor({0.5, 1.0}, {2});
  const st::Tensor ct = st::tensor({2.0, -1.0}, {2});
  auto pulled = [](const st::Tensor& p, const st::Tensor& c) {
    auto [y, pullback] = st::vjp(square_or_sin, p);
    return std::get<0>(pullback(c));
  };
  const st::Graph vg = st::trace(pulled)(x, ct);
  // 2 x ct, or cos(x) ct.
  EXPECT_TRUE(allclose(vg(x, ct).at(0), x * ct * 2.0));
  EXPECT_TRUE(allclose(vg(-x, ct).at(0), (-x).cos() * ct));

  const st::Graph jg = st::trace(st::jacrev(square_or_sin))(x);
  // diag(2 x), or diag(cos x): eye(2) * v.
  EXPECT_TRUE(allclose(jg(x * 2.0).at(0), st::eye(2, 2, st::kFloat64) * (x * 4.0)));
  EXPECT_TRUE(allclose(jg(-x).at(0), st::eye(2, 2, st::kFloat64) * (-x).cos()));
}

// A cond inside a scan's step, under grad: the scan unrolls, each step's cond
// is a forward and a backward node.
TEST(ControlFlowTraceGrad, CondInAScanStepUnderGrad) {
  const st::Tensor xs = st::tensor({1.0, -2.0, 0.5}, {3, 1});
  // c <- c * x when c * x > 0, else c + x; d/dc of the last carry.
  auto last = [&](const st::Tensor& c0) {
    return st::scan(
               [](const st::Tensor& c, const st::Tensor& x) {
                 const st::Tensor next =
                     st::cond((c * x).sum() > 0.0,
                              [](const st::Tensor& u, const st::Tensor& v) { return u * v; },
                              [](const st::Tensor& u, const st::Tensor& v) { return u + v; }, c, x);
                 return std::pair{next, next};
               },
               c0, xs)
        .first.sum();
  };
  const st::Graph g = st::trace(st::grad(last))(st::tensor({2.0}, {1}));
  EXPECT_EQ(count_ops(g.op_names(), "strata::cond"), 6) << g.to_string();
  // The derivative is the product of each step's: x where it multiplied, 1
  // where it added.
  // From 2: 2 * 1 = 2 (d 1); 2 * -2 < 0: 2 - 2 = 0 (d 1); 0 * 0.5 = 0: 0.5 (d 1).
  EXPECT_TRUE(allclose(g(st::tensor({2.0}, {1})).at(0), st::tensor({1.0}, {1})));
  // From 3: 3 (d 1); 3 * -2 < 0: 1 (d 1); 1 * 0.5 > 0: 0.5 (d 0.5).
  EXPECT_TRUE(allclose(g(st::tensor({3.0}, {1})).at(0), st::tensor({0.5}, {1})));
  // From -3: -3 < 0: -2 (d 1); -2 * -2 = 4 > 0 (d -2); 4 * 0.5 > 0: 2 (d 0.5).
  EXPECT_TRUE(allclose(g(st::tensor({-3.0}, {1})).at(0), st::tensor({-1.0}, {1})));
}

TEST(ControlFlowTraceGrad, WhileLoopAndNestedGradStillRefused) {
  const st::Tensor x = st::tensor({0.5, 1.0}, {2});
  auto loop_loss = [](const st::Tensor& v) {
    return st::while_loop([](const st::Tensor& u) { return u.sum() < 10.0; },
                          [](const st::Tensor& u) { return u * 2.0; }, v)
        .sum();
  };
  expect_contains(error_message([&] { st::trace(st::grad(loop_loss))(x); }),
                  {"strata::while_loop", "inside a transform", "grad", "reverse mode"});
  // Two grad levels: the inner one would have to lower the outer one too.
  auto inner = [](const st::Tensor& v) { return st::grad(capturing_loss)(v).sum(); };
  expect_contains(error_message([&] { st::trace(st::grad(inner))(x); }),
                  {"strata::cond", "inside a transform", "grad"});
}

}  // namespace
