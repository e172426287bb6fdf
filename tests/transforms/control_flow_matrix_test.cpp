// The matrix: {cond, while_loop, scan, map} x {eager, grad, jvp, vmap,
// vmap(vmap), vmap(grad), grad(vmap), jacrev, jacfwd, functionalize, trace,
// trace + replay}. Every cell is checked against the same computation written
// as a plain C++ if or loop over concrete values (item() picks the branch or
// ends the loop), and every derivative against central finite differences of
// that reference in Float64. Each function writes a tensor it made itself in
// place (allowed everywhere; under functionalize it is functionalized; the
// written tensor holds every batch level of what is added to it), and
// the data make branches and trip counts differ between lanes and between the
// traced and the replayed inputs.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <algorithm>
#include <functional>
#include <string>

#include "tests/test_support.h"

namespace st = strata;

namespace {

using st::testing::allclose;
using Fn = std::function<st::Tensor(const st::Tensor&, const st::Tensor&)>;

struct Case {
  std::string name;
  Fn f;    // with the control-flow operator
  Fn ref;  // the plain C++ if or loop
  // Inputs for the replay that take another branch or trip count than x's.
  std::function<st::Tensor(const st::Tensor&)> other_x;
};

// cond on the data: both branches write their own temporary in place.
st::Tensor cond_f(const st::Tensor& x, const st::Tensor& w) {
  return st::cond(
      (x * w).sum() > 0.0,
      [](const st::Tensor& a, const st::Tensor& b) {
        st::Tensor t = a.sin() * b;
        t.add_(a * a);
        return t;
      },
      [](const st::Tensor& a, const st::Tensor& b) {
        st::Tensor t = a * b;
        t.add_(a.sin());
        return t.exp() - a;
      },
      x, w);
}
st::Tensor cond_ref(const st::Tensor& x, const st::Tensor& w) {
  if ((x * w).sum().item<double>() > 0) return x.sin() * w + x * x;
  return (x * w + x.sin()).exp() - x;
}

// while_loop whose trip count depends on the data (each step adds at least 1.5
// to the sum of a carry above -3, so it ends); w is captured by the body.
st::Tensor while_f(const st::Tensor& x, const st::Tensor& w) {
  return st::while_loop([](const st::Tensor& c) { return c.sum() < 8.0; },
                        [&](const st::Tensor& c) {
                          st::Tensor t = (c * w).sin() * 0.5;
                          t.add_(c * 1.3 + 1.0);
                          return t;
                        },
                        x);
}
st::Tensor while_ref(const st::Tensor& x, const st::Tensor& w) {
  st::Tensor c = x;
  while (c.sum().item<double>() < 8.0) c = c * 1.3 + 1.0 + (c * w).sin() * 0.5;
  return c;
}

// scan of a tanh cell over three steps built from x; the result is the last
// carry plus the sum of the ys.
st::Tensor scan_f(const st::Tensor& x, const st::Tensor& w) {
  const st::Tensor xs = st::stack({x, x.sin(), x * w}, 0);
  const auto [last, ys] = st::scan(
      [&](const st::Tensor& h, const st::Tensor& e) {
        st::Tensor t = e * w;
        t.add_(h * 0.7);
        t = t.tanh();
        return std::pair{t, t * e};
      },
      x.cos(), xs);
  return last + ys.sum(0);
}
st::Tensor scan_ref(const st::Tensor& x, const st::Tensor& w) {
  const std::vector<st::Tensor> xs{x, x.sin(), x * w};
  st::Tensor h = x.cos();
  st::Tensor total = st::zeros({3}, st::kFloat64);
  for (const st::Tensor& e : xs) {
    h = (h * 0.7 + e * w).tanh();
    total = total + h * e;
  }
  return h + total;
}

st::Tensor map_f(const st::Tensor& x, const st::Tensor& w) {
  const st::Tensor xs = st::stack({x, x * w, x.cos()}, 0);
  return st::map(
             [&](const st::Tensor& row) {
               st::Tensor t = row.sin();
               t.mul_((row * w).sum());
               return t;
             },
             xs)
      .sum(0);
}
st::Tensor map_ref(const st::Tensor& x, const st::Tensor& w) {
  st::Tensor total = st::zeros({3}, st::kFloat64);
  for (const st::Tensor& row : {x, x * w, x.cos()}) total = total + row.sin() * (row * w).sum();
  return total;
}

std::vector<Case> cases() {
  return {{"cond", cond_f, cond_ref, [](const st::Tensor& x) { return -x; }},
          {"while_loop", while_f, while_ref, [](const st::Tensor& x) { return x * 0.3; }},
          {"scan", scan_f, scan_ref, [](const st::Tensor& x) { return x * -1.7; }},
          {"map", map_f, map_ref, [](const st::Tensor& x) { return x * 2.1; }}};
}

// d ref(x, w) / dx by central differences: [3 outputs, 3 inputs].
st::Tensor fd_jacobian(const Fn& ref, const st::Tensor& x, const st::Tensor& w) {
  const double eps = 1e-6;
  std::vector<st::Tensor> columns;
  for (int64_t i = 0; i < x.size(0); ++i) {
    std::vector<double> step(static_cast<size_t>(x.size(0)), 0.0);
    step[static_cast<size_t>(i)] = eps;
    const st::Tensor e = st::tensor(step, {x.size(0)});
    columns.push_back((ref(x + e, w) - ref(x - e, w)) / (2 * eps));
  }
  return st::stack(columns, 1);
}

constexpr double kFdRtol = 1e-5;
constexpr double kFdAtol = 1e-6;

// Lanes that take different branches and trip counts.
const st::Tensor& batch_x() {
  static const st::Tensor xs = st::tensor({0.5, 1.0, 0.25, -0.4, 0.3, -0.9, 1.6, 0.2, 0.9, 0.1, 0.05, 0.3}, {4, 3});
  return xs;
}
const st::Tensor& batch_w() {
  static const st::Tensor ws = st::tensor({0.7, -0.2, 0.4, 1.1, 0.6, 0.3, -0.5, 0.8, 0.2, 0.9, 1.2, -0.3}, {4, 3});
  return ws;
}

class Matrix : public ::testing::TestWithParam<size_t> {
 protected:
  Case c = cases().at(GetParam());
  st::Tensor x = st::tensor({0.6, 1.1, 0.35}, {3});
  st::Tensor w = st::tensor({0.4, -0.3, 0.8}, {3});
};

TEST_P(Matrix, Eager) {
  EXPECT_TRUE(allclose(c.f(x, w), c.ref(x, w)));
  EXPECT_TRUE(allclose(c.f(c.other_x(x), w), c.ref(c.other_x(x), w)));
}

TEST_P(Matrix, GradJvpJacrevJacfwd) {
  for (const st::Tensor& at : {x, c.other_x(x)}) {
    const st::Tensor jac = fd_jacobian(c.ref, at, w);
    auto of_x = [&](const st::Tensor& v) { return c.f(v, w); };
    auto loss = [&](const st::Tensor& v) { return c.f(v, w).sum(); };
    EXPECT_TRUE(allclose(st::grad(loss)(at), jac.sum(0), kFdRtol, kFdAtol));
    const st::Tensor t = st::tensor({0.3, -1.0, 0.5}, {3});
    const auto [value, tangent] = st::jvp(of_x, std::tuple{at}, std::tuple{t});
    EXPECT_TRUE(allclose(value, c.ref(at, w)));
    EXPECT_TRUE(allclose(tangent, st::matmul(jac, t), kFdRtol, kFdAtol));
    EXPECT_TRUE(allclose(st::jacrev(of_x)(at), jac, kFdRtol, kFdAtol));
    EXPECT_TRUE(allclose(st::jacfwd(of_x)(at), jac, kFdRtol, kFdAtol));
  }
}

TEST_P(Matrix, VmapVmapOfGradAndGradOfVmap) {
  const st::Tensor& xs = batch_x();
  const st::Tensor& ws = batch_w();
  const st::Tensor out = st::vmap(c.f)(xs, ws);
  auto loss = [&](const st::Tensor& v, const st::Tensor& u) { return c.f(v, u).sum(); };
  const st::Tensor per_lane = st::vmap(st::grad(loss))(xs, ws);
  const st::Tensor of_total =
      st::grad([&](const st::Tensor& v) { return st::vmap(c.f)(v, ws).sum(); })(xs);
  for (int64_t b = 0; b < xs.size(0); ++b) {
    const st::Tensor xb = xs.select(0, b);
    const st::Tensor wb = ws.select(0, b);
    EXPECT_TRUE(allclose(out.select(0, b), c.ref(xb, wb))) << b;
    const st::Tensor expected = fd_jacobian(c.ref, xb, wb).sum(0);
    EXPECT_TRUE(allclose(per_lane.select(0, b), expected, kFdRtol, kFdAtol)) << b;
    EXPECT_TRUE(allclose(of_total.select(0, b), expected, kFdRtol, kFdAtol)) << b;
  }
}

// vmap(vmap(f)) with x batched at the outer level only, the inner only, and
// both, with equal (3, 3) and different (2, 4) sizes; w carries the other level.
TEST_P(Matrix, NestedVmapBatchedAtEitherOrBothLevels) {
  st::Generator gen(11);
  for (auto [outer, inner] : {std::pair<int64_t, int64_t>{3, 3}, {2, 4}}) {
    const st::Tensor xo = st::rand({outer, 3}, gen, st::kFloat64) - 0.3;
    const st::Tensor wi = st::rand({inner, 3}, gen, st::kFloat64) - 0.3;
    const st::Tensor x_outer_only = st::vmap([&](const st::Tensor& xb) {
      return st::vmap(c.f, {.in_dims = {std::nullopt, 0}})(xb, wi);
    })(xo);
    const st::Tensor xi = st::rand({inner, 3}, gen, st::kFloat64) - 0.3;
    const st::Tensor wo = st::rand({outer, 3}, gen, st::kFloat64) - 0.3;
    const st::Tensor x_inner_only = st::vmap([&](const st::Tensor& wb) {
      return st::vmap(c.f, {.in_dims = {0, std::nullopt}})(xi, wb);
    })(wo);
    const st::Tensor xx = st::rand({outer, inner, 3}, gen, st::kFloat64) - 0.3;
    const st::Tensor both = st::vmap(st::vmap(c.f, {.in_dims = {0, std::nullopt}}))(xx, wo);
    for (int64_t i = 0; i < outer; ++i) {
      for (int64_t j = 0; j < inner; ++j) {
        const std::string at = std::to_string(outer) + "x" + std::to_string(inner) + " lane " +
                               std::to_string(i) + "," + std::to_string(j);
        EXPECT_TRUE(allclose(x_outer_only.select(0, i).select(0, j),
                             c.ref(xo.select(0, i), wi.select(0, j)))) << at;
        EXPECT_TRUE(allclose(x_inner_only.select(0, i).select(0, j),
                             c.ref(xi.select(0, j), wo.select(0, i)))) << at;
        EXPECT_TRUE(allclose(both.select(0, i).select(0, j),
                             c.ref(xx.select(0, i).select(0, j), wo.select(0, i)))) << at;
      }
    }
  }
}

TEST_P(Matrix, Functionalize) {
  for (const st::Tensor& at : {x, c.other_x(x)}) {
    EXPECT_TRUE(allclose(st::functionalize(c.f)(at, w), c.ref(at, w)));
  }
  const st::Tensor& xs = batch_x();
  const st::Tensor out = st::vmap(st::functionalize(c.f))(xs, batch_w());
  for (int64_t b = 0; b < xs.size(0); ++b) {
    EXPECT_TRUE(allclose(out.select(0, b), c.ref(xs.select(0, b), batch_w().select(0, b)))) << b;
  }
}

TEST_P(Matrix, TraceAndReplay) {
  const st::Graph g = st::trace(c.f)(x, w);
  EXPECT_TRUE(allclose(g(x, w).at(0), c.ref(x, w)));
  const st::Tensor other = c.other_x(x);
  const st::Tensor w2 = w * 1.5;
  EXPECT_TRUE(allclose(g(other, w2).at(0), c.ref(other, w2)));
  // The replay under the transforms: its gradient against the reference's
  // finite differences, and per lane under vmap.
  auto replay = [&](const st::Tensor& v, const st::Tensor& u) { return g(v, u).at(0); };
  EXPECT_TRUE(allclose(st::grad([&](const st::Tensor& v) { return replay(v, w).sum(); })(other),
                       fd_jacobian(c.ref, other, w).sum(0), kFdRtol, kFdAtol));
  const st::Tensor out = st::vmap(replay)(batch_x(), batch_w());
  for (int64_t b = 0; b < batch_x().size(0); ++b) {
    EXPECT_TRUE(allclose(out.select(0, b), c.ref(batch_x().select(0, b), batch_w().select(0, b)))) << b;
  }
}

// The data really choose: different branches and trip counts among the lanes.
TEST(MatrixData, LanesTakeDifferentPaths) {
  std::vector<bool> branches;
  std::vector<int> trips;
  for (int64_t b = 0; b < batch_x().size(0); ++b) {
    const st::Tensor xb = batch_x().select(0, b);
    branches.push_back((xb * batch_w().select(0, b)).sum().item<double>() > 0);
    int n = 0;
    for (st::Tensor cur = xb; cur.sum().item<double>() < 8.0; ++n) {
      cur = cur * 1.3 + 1.0 + (cur * batch_w().select(0, b)).sin() * 0.5;
    }
    trips.push_back(n);
  }
  EXPECT_NE(std::count(branches.begin(), branches.end(), true), 0);
  EXPECT_NE(std::count(branches.begin(), branches.end(), false), 0);
  EXPECT_NE(*std::min_element(trips.begin(), trips.end()), *std::max_element(trips.begin(), trips.end()));
}

INSTANTIATE_TEST_SUITE_P(ControlFlow, Matrix, ::testing::Range<size_t>(0, 4),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return cases().at(info.param).name;
                         });

}  // namespace
