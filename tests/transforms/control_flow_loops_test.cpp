// while_loop, scan and map: eager, grad, jvp and vmap, each against the same
// computation written as a C++ loop; gradients against finite differences in Float64.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>

#include "tests/test_support.h"

namespace st = strata;

namespace {

using st::testing::allclose;
using Carry = std::pair<st::Tensor, st::Tensor>;  // {value, step count}

// Doubles-and-shifts x until its sum passes 10; counts the steps.
Carry grow(const st::Tensor& x0) {
  return st::while_loop([](const Carry& c) { return c.first.sum() < 10.0; },
                        [](const Carry& c) { return Carry{c.first * 1.5 + c.first.sin(), c.second + 1.0}; },
                        Carry{x0, st::zeros({}, st::kFloat64)});
}
Carry grow_with_loop(const st::Tensor& x0) {
  Carry c{x0, st::zeros({}, st::kFloat64)};
  while (c.first.sum().item<double>() < 10.0) c = {c.first * 1.5 + c.first.sin(), c.second + 1.0};
  return c;
}

TEST(WhileLoop, EagerMatchesACppLoop) {
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  const auto [value, steps] = grow(x);
  const auto [ref_value, ref_steps] = grow_with_loop(x);
  EXPECT_TRUE(allclose(value, ref_value));
  EXPECT_GT(ref_steps.item<double>(), 2.0);
  EXPECT_EQ(steps.item<double>(), ref_steps.item<double>());
}

TEST(WhileLoop, ReverseAndForwardModeMatchFiniteDifferences) {
  auto f = [](const std::vector<st::Tensor>& in) { return std::vector<st::Tensor>{grow(in[0]).first}; };
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  EXPECT_TRUE(st::testing::gradcheck(f, {x}));
  EXPECT_TRUE(st::testing::jvpcheck(f, {x}));
  auto loss = [](const st::Tensor& v) { return grow(v).first.pow(2.0).sum(); };
  auto loss_loop = [](const st::Tensor& v) { return grow_with_loop(v).first.pow(2.0).sum(); };
  EXPECT_TRUE(allclose(st::grad(loss)(x), st::grad(loss_loop)(x)));
  EXPECT_TRUE(allclose(st::hessian(loss)(x), st::hessian(loss_loop)(x), 1e-8, 1e-6));
}

TEST(WhileLoopVmap, PerSampleTripCountsMatchALoopOverTheBatch) {
  const st::Tensor xs = st::tensor({0.5, 1.0, 0.25, 3.0, 0.1, 2.0}, {3, 2});
  const Carry batched = st::vmap(grow)(xs);
  std::vector<double> counts;
  for (int64_t b = 0; b < 3; ++b) {
    const Carry ref = grow_with_loop(xs.select(0, b));
    EXPECT_TRUE(allclose(batched.first.select(0, b), ref.first)) << b;
    EXPECT_TRUE(allclose(batched.second.select(0, b), ref.second)) << b;
    counts.push_back(ref.second.item<double>());
  }
  EXPECT_NE(counts[0], counts[1]);  // the lanes really finish at different steps
  // grad over vmap, vmap over grad, and jvp, against each lane's loop.
  auto lane_loss = [](const st::Tensor& v) { return grow_with_loop(v).first.pow(2.0).sum(); };
  auto loss = [](const st::Tensor& v) { return grow(v).first.pow(2.0).sum(); };
  const st::Tensor g_outer = st::grad([&](const st::Tensor& v) { return st::vmap(loss)(v).sum(); })(xs);
  const st::Tensor g_inner = st::vmap(st::grad(loss))(xs);
  for (int64_t b = 0; b < 3; ++b) {
    const st::Tensor expected = st::grad(lane_loss)(xs.select(0, b));
    EXPECT_TRUE(allclose(g_outer.select(0, b), expected)) << b;
    EXPECT_TRUE(allclose(g_inner.select(0, b), expected)) << b;
  }
  auto f = [](const std::vector<st::Tensor>& in) {
    return std::vector<st::Tensor>{st::vmap([](const st::Tensor& v) { return grow(v).first; })(in[0])};
  };
  EXPECT_TRUE(st::testing::gradcheck(f, {xs}));
  EXPECT_TRUE(st::testing::jvpcheck(f, {xs}));
}

TEST(WhileLoopVmap, FrozenLanesDoNotPoisonGradients) {
  // Once a lane passes 4 it stops; the body evaluated there would take sqrt of
  // a negative number, whose derivative is NaN.
  auto climb = [](const st::Tensor& x0) {
    return st::while_loop([](const st::Tensor& x) { return x < 4.0; },
                          [](const st::Tensor& x) { return x + (5.0 - x).sqrt(); }, x0);
  };
  auto climb_loop = [](const st::Tensor& x0) {
    st::Tensor x = x0;
    while (x.item<double>() < 4.0) x = x + (5.0 - x).sqrt();
    return x;
  };
  const st::Tensor xs = st::tensor({0.0, 3.9, 2.0, 4.5}, {4});
  const st::Tensor g = st::grad([&](const st::Tensor& v) { return st::vmap(climb)(v).sum(); })(xs);
  for (int64_t b = 0; b < 4; ++b) {
    const double expected = st::grad(climb_loop)(xs.select(0, b)).item<double>();
    EXPECT_TRUE(std::isfinite(g.select(0, b).item<double>())) << b;
    EXPECT_NEAR(g.select(0, b).item<double>(), expected, 1e-9) << b;
  }
}

// An RNN-like cell: carry h, input x; y = h * x.
std::pair<st::Tensor, st::Tensor> cell(const st::Tensor& h, const st::Tensor& x) {
  const st::Tensor next = (h * 0.7 + x).tanh();
  return {next, next * x};
}
std::pair<st::Tensor, st::Tensor> cell_loop(const st::Tensor& h0, const st::Tensor& xs, bool reverse) {
  const int64_t n = xs.sizes()[0];
  st::Tensor h = h0;
  std::vector<st::Tensor> ys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = reverse ? n - 1 - i : i;
    auto [next, y] = cell(h, xs.select(0, t));
    h = next;
    ys[static_cast<size_t>(t)] = y;
  }
  return {h, st::stack(ys, 0)};
}

TEST(Scan, EagerAndReverseMatchACppLoop) {
  st::Generator gen(7);
  const st::Tensor h0 = st::randn({3}, gen, st::kFloat64);
  const st::Tensor xs = st::randn({5, 3}, gen, st::kFloat64);
  for (bool reverse : {false, true}) {
    const auto [last, ys] = st::scan(cell, h0, xs, {.reverse = reverse});
    const auto [ref_last, ref_ys] = cell_loop(h0, xs, reverse);
    EXPECT_TRUE(allclose(last, ref_last)) << reverse;
    EXPECT_TRUE(allclose(ys, ref_ys)) << reverse;
  }
}

TEST(Scan, GradJvpAndVmap) {
  st::Generator gen(8);
  const st::Tensor h0 = st::randn({3}, gen, st::kFloat64);
  const st::Tensor xs = st::randn({4, 3}, gen, st::kFloat64);
  auto f = [](const std::vector<st::Tensor>& in) {
    const auto [last, ys] = st::scan(cell, in[0], in[1]);
    return std::vector<st::Tensor>{last, ys};
  };
  EXPECT_TRUE(st::testing::gradcheck(f, {h0, xs}));
  EXPECT_TRUE(st::testing::jvpcheck(f, {h0, xs}));
  auto loss = [](const st::Tensor& h, const st::Tensor& x) { return st::scan(cell, h, x).second.sum(); };
  auto loss_loop = [](const st::Tensor& h, const st::Tensor& x) {
    return cell_loop(h, x, false).second.sum();
  };
  const auto [gh, gx] = st::grad<0, 1>(loss)(h0, xs);
  const auto [rh, rx] = st::grad<0, 1>(loss_loop)(h0, xs);
  EXPECT_TRUE(allclose(gh, rh));
  EXPECT_TRUE(allclose(gx, rx));
  // vmap over a batch of sequences (batch of 2, each 4 steps).
  const st::Tensor batch = st::randn({2, 4, 3}, gen, st::kFloat64);
  const auto [lasts, yss] = st::vmap([&](const st::Tensor& x) { return st::scan(cell, h0, x); })(batch);
  for (int64_t b = 0; b < 2; ++b) {
    const auto [ref_last, ref_ys] = cell_loop(h0, batch.select(0, b), false);
    EXPECT_TRUE(allclose(lasts.select(0, b), ref_last));
    EXPECT_TRUE(allclose(yss.select(0, b), ref_ys));
  }
}

TEST(Map, EqualsVmapAndALoop) {
  st::Generator gen(9);
  const st::Tensor xs = st::randn({4, 3}, gen, st::kFloat64);
  const st::Tensor ws = st::randn({4, 3}, gen, st::kFloat64);
  using In = std::pair<st::Tensor, st::Tensor>;
  auto f = [](const In& in) { return (in.first * in.second).sum() + in.first.sin(); };
  const st::Tensor mapped = st::map(f, In{xs, ws});
  EXPECT_TRUE(allclose(mapped, st::vmap([&](const st::Tensor& x, const st::Tensor& w) {
                         return f(In{x, w});
                       })(xs, ws)));
  for (int64_t b = 0; b < 4; ++b) {
    EXPECT_TRUE(allclose(mapped.select(0, b), f(In{xs.select(0, b), ws.select(0, b)})));
  }
  auto g = [&](const std::vector<st::Tensor>& in) {
    return std::vector<st::Tensor>{st::map(f, In{in[0], in[1]})};
  };
  EXPECT_TRUE(st::testing::gradcheck(g, {xs, ws}));
  EXPECT_TRUE(st::testing::jvpcheck(g, {xs, ws}));
  // Under vmap: a batch of 2 stacks of 4 samples.
  const st::Tensor batch = st::randn({2, 4, 3}, gen, st::kFloat64);
  const st::Tensor out = st::vmap([&](const st::Tensor& x) { return st::map(f, In{x, ws}); })(batch);
  for (int64_t b = 0; b < 2; ++b) EXPECT_TRUE(allclose(out.select(0, b), st::map(f, In{batch.select(0, b), ws})));
}

}  // namespace
