// cond and while_loop traced inside vmap, jvp and functionalize (Note [Control
// flow traced inside vmap and functionalize]): one node on the values below the
// layers, whose replay decides from its own data; each replay is checked
// against a plain C++ if or loop over the samples.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <tuple>

#include "tests/test_support.h"

namespace st = strata;

namespace {

using st::testing::allclose;
using st::testing::count_ops;
using st::testing::error_message;
using st::testing::expect_contains;

// y is the same for every sample: one branch for the whole batch.
st::Tensor shared_choice(const st::Tensor& v, const st::Tensor& y) {
  return st::cond(
      y.sum() > 0.0, [&](const st::Tensor& a) { return a.sin() * y.sum(); },
      [](const st::Tensor& a) { return a - 1.0; }, v);
}

TEST(ControlFlowTraceLowered, CondWithASharedPredicateInsideVmapIsOneNode) {
  const st::Tensor xs = st::tensor({0.5, 1.0, -0.25, 2.0, 0.0, -1.0}, {3, 2});
  const st::Tensor y = st::tensor({0.5, 0.25}, {2});
  for (int64_t in_dim : {0, 1}) {
    auto batched = st::vmap(shared_choice, {.in_dims = {in_dim, std::nullopt}});
    const st::Tensor x_in = in_dim == 0 ? xs : xs.t().contiguous();
    for (st::TraceMode mode : {st::TraceMode::Real, st::TraceMode::Fake}) {
      const st::Graph g = st::trace(batched, {.mode = mode})(x_in, y);
      EXPECT_EQ(count_ops(g.op_names(), "strata::cond"), 1) << g.to_string();
      EXPECT_EQ(count_ops(g.op_names(), "strata::sin"), 0) << g.to_string();
      for (const st::Tensor& y2 : {y, -y, y * 4.0}) {
        const double s = y2.sum().item<double>();
        // Each row: sin(row) * s when s > 0, else row - 1.
        const st::Tensor expected = s > 0 ? xs.sin() * s : xs - 1.0;
        EXPECT_TRUE(allclose(g(x_in * 1.0, y2).at(0), expected)) << in_dim << " " << s;
      }
    }
  }
}

// A per-sample trip count: every row steps until its own sum passes 10.
using Carry = std::pair<st::Tensor, st::Tensor>;  // {value, steps}
Carry grow(const st::Tensor& x0) {
  return st::while_loop([](const Carry& c) { return c.first.sum() < 10.0; },
                        [](const Carry& c) {
                          return Carry{c.first * 1.5 + 1.0, c.second + 1.0};
                        },
                        Carry{x0, st::zeros({}, st::kFloat64)});
}

TEST(ControlFlowTraceLowered, WhileLoopInsideVmapStepsEachSampleAsItsDataNeeds) {
  auto batched = st::vmap([](const st::Tensor& v) {
    const Carry c = grow(v);
    return c.first + c.second;
  });
  const st::Tensor xs = st::tensor({1.0, 2.0, 4.0, 4.0, 0.0, 0.5}, {3, 2});
  const st::Graph g = st::trace(batched)(xs);
  EXPECT_EQ(count_ops(g.op_names(), "strata::while_loop"), 1) << g.to_string();
  for (const st::Tensor& input : {xs, xs * 3.0, xs - 2.0}) {
    const st::Tensor out = g(input).at(0);
    for (int64_t b = 0; b < 3; ++b) {
      st::Tensor v = input.select(0, b);
      double steps = 0;
      while (v.sum().item<double>() < 10.0) {
        v = v * 1.5 + 1.0;
        steps += 1;
      }
      EXPECT_TRUE(allclose(out.select(0, b), v + steps)) << b;
    }
  }
}

TEST(ControlFlowTraceLowered, WhileLoopWithASharedTripCountInsideVmap) {
  // The count comes from the unbatched n: 0, 1, 2 ... steps of doubling.
  auto doubled = [](const st::Tensor& v, const st::Tensor& n) {
    return st::while_loop([&](const Carry& c) { return c.second < n; },
                          [](const Carry& c) {
                            return Carry{c.first * 2.0, c.second + 1.0};
                          },
                          Carry{v, st::zeros({}, st::kFloat64)})
        .first;
  };
  auto batched = st::vmap(doubled, {.in_dims = {0, std::nullopt}});
  const st::Tensor xs = st::tensor({1.0, -2.0, 0.5}, {3});
  const st::Graph g = st::trace(batched)(xs, st::tensor({2.0}, {}));
  EXPECT_EQ(count_ops(g.op_names(), "strata::while_loop"), 1) << g.to_string();
  for (double n : {0.0, 1.0, 3.0}) {
    EXPECT_TRUE(allclose(g(xs, st::tensor({n}, {})).at(0), xs * std::pow(2.0, n))) << n;
  }
}

// functionalize under the trace: the write through a view reaches the operand
// the node takes, and replays decide the branch from their own data.
TEST(ControlFlowTraceLowered, CondInsideFunctionalizeAfterAViewWrite) {
  auto f = [](const st::Tensor& v) {
    st::Tensor t = v.clone();
    t.reshape({-1}).mul_(st::tensor({2.0, 3.0}, {2}));
    return st::cond(
        v.sum() > 0.0, [](const st::Tensor& a) { return a * 10.0; },
        [](const st::Tensor& a) { return a - 1.0; }, t);
  };
  const st::Tensor x = st::tensor({1.0, 2.0}, {2});
  for (st::Remove remove : {st::Remove::Mutations, st::Remove::MutationsAndViews}) {
    const st::Graph g = st::trace(st::functionalize(f, remove))(x);
    EXPECT_EQ(count_ops(g.op_names(), "strata::cond"), 1) << g.to_string();
    EXPECT_TRUE(allclose(g(x).at(0), st::tensor({20.0, 60.0}, {2})));
    EXPECT_TRUE(allclose(g(-x).at(0), st::tensor({-3.0, -7.0}, {2})));
  }
  // vmap > functionalize: both levels lowered.
  const st::Tensor xs = st::stack({x, -x}, 0);
  const st::Graph g = st::trace(st::vmap(st::functionalize(f)))(xs);
  EXPECT_TRUE(allclose(g(xs).at(0), st::tensor({20.0, 60.0, -3.0, -7.0}, {2, 2})));
}

// Inside jvp the node's functions carry primal and tangent together: the
// replay's tangent is the taken branch's, or the loop's over its steps.
TEST(ControlFlowTraceLowered, InsideJvpTheNodeCarriesTangents) {
  const st::Tensor x = st::tensor({0.5, 1.0}, {2});
  const st::Tensor v = st::tensor({1.0, -2.0}, {2});
  auto tangent_of_cond = [](const st::Tensor& p, const st::Tensor& t, const st::Tensor& y) {
    return st::jvp([&](const st::Tensor& u) { return shared_choice(u, y); }, std::tuple{p},
                   std::tuple{t})
        .second;
  };
  const st::Tensor y = st::tensor({0.5, 0.25}, {2});
  const st::Graph g = st::trace(tangent_of_cond)(x, v, y);
  EXPECT_EQ(count_ops(g.op_names(), "strata::cond"), 1) << g.to_string();
  // d/du sin(u) * s = cos(u) * s along t; d/du (u - 1) = t.
  for (const st::Tensor& y2 : {y, -y}) {
    const double s = y2.sum().item<double>();
    const st::Tensor expected = s > 0 ? (x * 2.0).cos() * s * v : v;
    EXPECT_TRUE(allclose(g(x * 2.0, v, y2).at(0), expected)) << s;
  }
  // grow: v <- 1.5 v + 1 until the sum passes 10, so the tangent is 1.5^steps t.
  auto tangent_of_loop = [](const st::Tensor& p, const st::Tensor& t) {
    return st::jvp([](const st::Tensor& u) { return grow(u).first; }, std::tuple{p}, std::tuple{t})
        .second;
  };
  const st::Graph lg = st::trace(tangent_of_loop)(x, v);
  EXPECT_EQ(count_ops(lg.op_names(), "strata::while_loop"), 1) << lg.to_string();
  for (const st::Tensor& input : {x, x * 4.0}) {
    const double steps = grow(input).second.item<double>();
    EXPECT_TRUE(allclose(lg(input, v).at(0), v * std::pow(1.5, steps))) << steps;
  }
}

// Inside grad with vmap around it (control_flow_trace_grad_test.cpp has
// grad alone).
TEST(ControlFlowTraceLowered, InsideGradAmongOtherLayersStillRefused) {
  const st::Tensor x = st::tensor({0.5, 1.0}, {2});
  auto loss = [&x](const st::Tensor& v) { return shared_choice(v, x).sum(); };
  expect_contains(error_message([&] {
                    st::trace(st::vmap(st::grad(loss)))(st::stack({x, -x}, 0));
                  }),
                  {"strata::cond", "inside a transform", "grad", "one grad level alone"});
  auto loop_loss = [](const st::Tensor& v) { return grow(v).first.sum(); };
  expect_contains(error_message([&] { st::trace(st::grad(loop_loss))(x); }),
                  {"strata::while_loop", "inside a transform", "grad", "reverse mode"});
}

}  // namespace
