// cond, while_loop, scan and map under trace(): one node with subgraphs whose
// replay decides from the replay's own data, each replay checked against the
// same computation as a plain C++ if or loop; fake mode, the text, and the
// errors of functions that cannot be recorded.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <algorithm>

#include "tests/test_support.h"

namespace st = strata;

namespace {

using st::testing::allclose;
using st::testing::count_ops;
using st::testing::error_message;
using st::testing::expect_contains;

// cond on the data: sin(x) * w if sum(x) > 0, else cos(x) + w; w is captured.
st::Tensor branchy(const st::Tensor& x, const st::Tensor& w) {
  const st::Tensor scale = w.exp();
  return st::cond(
             x.sum() > 0.0, [&](const st::Tensor& a) { return a.sin() * scale; },
             [&](const st::Tensor& a) { return a.cos() + scale; }, x) *
         2.0;
}
st::Tensor branchy_with_if(const st::Tensor& x, const st::Tensor& w) {
  const st::Tensor scale = w.exp();
  return (x.sum().item<double>() > 0.0 ? x.sin() * scale : x.cos() + scale) * 2.0;
}

TEST(ControlFlowTrace, CondIsOneNodeAndReplayTakesTheNewDatasBranch) {
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  const st::Tensor w = st::tensor({0.1, 0.2, 0.3}, {3});
  const st::Graph g = st::trace(branchy)(x, w);
  const std::vector<std::string> names = g.op_names();
  EXPECT_EQ(count_ops(names, "strata::cond"), 1) << g.to_string();
  EXPECT_EQ(count_ops(names, "strata::sin"), 0) << g.to_string();
  EXPECT_EQ(count_ops(names, "strata::cos"), 0) << g.to_string();
  const st::Tensor w2 = st::tensor({-1.0, 0.5, 2.0}, {3});
  const st::Graph optimized = g.optimized();
  for (const st::Tensor& input : {x, -x, x * 3.0, -x - 1.0}) {
    EXPECT_TRUE(allclose(g(input, w2).at(0), branchy_with_if(input, w2)));
    EXPECT_TRUE(allclose(optimized(input, w2).at(0), branchy_with_if(input, w2)));
  }
}

TEST(ControlFlowTrace, ABranchReturningItsOperandIsStillTheNodesResult) {
  // The traced run takes the identity branch; a replay taking the other one
  // must not read the operand where the node's result is used.
  auto f = [](const st::Tensor& v) {
    return st::cond(
               v.sum() > 0.0, [](const st::Tensor& a) { return a; },
               [](const st::Tensor& a) { return -a; }, v) +
           v * 10.0;
  };
  const st::Tensor x = st::tensor({0.5, 1.0}, {2});
  for (st::TraceMode mode : {st::TraceMode::Real, st::TraceMode::Fake}) {
    const st::Graph g = st::trace(f, {.mode = mode})(x);
    EXPECT_TRUE(allclose(g(-x).at(0), x - x * 10.0)) << g.to_string();
    EXPECT_TRUE(allclose(g(x).at(0), x * 11.0)) << g.to_string();
  }
}

TEST(ControlFlowTrace, ReplayUnderGradAndVmapDifferentiatesAndBatchesTheBranch) {
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  const st::Tensor w = st::tensor({0.1, 0.2, 0.3}, {3});
  const st::Graph g = st::trace(branchy)(x, w);
  auto replayed = [&](const st::Tensor& v) { return g(v, w).at(0).sum(); };
  auto with_if = [&](const st::Tensor& v) { return branchy_with_if(v, w).sum(); };
  for (const st::Tensor& input : {x, -x}) {
    EXPECT_TRUE(allclose(st::grad(replayed)(input), st::grad(with_if)(input)));
  }
  const st::Tensor xs = st::stack({x, -x, x * 2.0}, 0);
  const st::Tensor batched = st::vmap([&](const st::Tensor& v) { return g(v, w).at(0); })(xs);
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_TRUE(allclose(batched.select(0, b), branchy_with_if(xs.select(0, b), w))) << b;
  }
}

using Carry = std::pair<st::Tensor, st::Tensor>;  // {value, step count}
Carry grow(const st::Tensor& x0, const st::Tensor& rate) {
  return st::while_loop([](const Carry& c) { return c.first.sum() < 10.0; },
                        [&](const Carry& c) {
                          return Carry{c.first * rate + c.first.sin(), c.second + 1.0};
                        },
                        Carry{x0, st::zeros({}, st::kFloat64)});
}
Carry grow_with_loop(const st::Tensor& x0, const st::Tensor& rate) {
  Carry c{x0, st::zeros({}, st::kFloat64)};
  while (c.first.sum().item<double>() < 10.0) c = {c.first * rate + c.first.sin(), c.second + 1.0};
  return c;
}

TEST(ControlFlowTrace, WhileLoopReplayRunsAsManyStepsAsTheNewDataNeeds) {
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  const st::Tensor rate = st::tensor({1.5}, {});
  const st::Graph g = st::trace(grow)(x, rate);
  EXPECT_EQ(count_ops(g.op_names(), "strata::while_loop"), 1) << g.to_string();
  EXPECT_EQ(count_ops(g.op_names(), "strata::sin"), 0) << g.to_string();
  std::vector<double> steps;
  for (const st::Tensor& input : {x, x * 0.1, x * 10.0}) {
    for (const st::Tensor& r : {rate, st::tensor({1.1}, {})}) {
      const std::vector<st::Tensor> out = g(input, r);
      const Carry ref = grow_with_loop(input, r);
      EXPECT_TRUE(allclose(out.at(0), ref.first));
      EXPECT_EQ(out.at(1).item<double>(), ref.second.item<double>());
      steps.push_back(ref.second.item<double>());
    }
  }
  EXPECT_GT(*std::max_element(steps.begin(), steps.end()), steps.front() + 1.0);
  // The text reads back, and a subgraph's bad line is named.
  const std::string text = g.to_string();
  EXPECT_EQ(st::Graph::parse(text).to_string(), text);
  std::string broken = text;
  broken.replace(broken.find("strata::sin"), 11, "strata::nope");
  expect_contains(error_message([&] { st::Graph::parse(broken); }),
                  {"Graph::parse", "unknown operator 'strata::nope'", "line "});
  expect_contains(error_message([&] { st::Graph::parse(text.substr(0, text.rfind("}\n"))); }),
                  {"Graph::parse", "no closing '}'"});
  EXPECT_EQ(*std::min_element(steps.begin(), steps.end()), 0.0);  // 10x starts past 10
}

// A small RNN over xs, with a data-dependent cond inside the step: the step's
// subgraph holds a nested cond node, and h0's weight is captured two levels down.
std::pair<st::Tensor, st::Tensor> rnn(const st::Tensor& h0, const st::Tensor& xs,
                                      const st::Tensor& w) {
  return st::scan(
      [&](const st::Tensor& h, const st::Tensor& x) {
        const st::Tensor pre = (h * w + x).tanh();
        const st::Tensor next = st::cond(
            x.sum() > 0.0, [&](const st::Tensor& p) { return p * w; },
            [](const st::Tensor& p) { return -p; }, pre);
        return std::pair{next, next.sum()};
      },
      h0, xs);
}
std::pair<st::Tensor, st::Tensor> rnn_with_loop(const st::Tensor& h0, const st::Tensor& xs,
                                                const st::Tensor& w) {
  st::Tensor h = h0;
  std::vector<st::Tensor> ys;
  for (int64_t t = 0; t < xs.size(0); ++t) {
    const st::Tensor x = xs.select(0, t);
    const st::Tensor pre = (h * w + x).tanh();
    h = x.sum().item<double>() > 0.0 ? pre * w : -pre;
    ys.push_back(h.sum());
  }
  return {h, st::stack(ys, 0)};
}

TEST(ControlFlowTrace, ScanWithANestedCondReplaysPerStepChoices) {
  const st::Tensor h0 = st::tensor({0.1, -0.2}, {2});
  const st::Tensor xs = st::tensor({0.5, 0.1, -1.0, -0.3, 0.2, 0.4, -0.5, 0.1}, {4, 2});
  const st::Tensor w = st::tensor({0.9, 1.1}, {2});
  const st::Graph g = st::trace(rnn)(h0, xs, w);
  EXPECT_EQ(g.op_names(), std::vector<std::string>{"strata::scan"}) << g.to_string();
  const std::string text = g.to_string();
  EXPECT_NE(text.find("  %"), std::string::npos) << text;         // an indented subgraph
  EXPECT_NE(text.find("    return"), std::string::npos) << text;  // a subgraph's subgraph
  const st::Graph parsed = st::Graph::parse(text);
  EXPECT_EQ(parsed.to_string(), text);
  for (const st::Tensor& input : {xs, -xs, xs * 2.0 - 0.3}) {
    const auto [h, ys] = rnn_with_loop(h0, input, w * 0.5);
    for (const st::Graph* graph : {&g, &parsed}) {
      const std::vector<st::Tensor> out = (*graph)(h0, input, w * 0.5);
      EXPECT_TRUE(allclose(out.at(0), h));
      EXPECT_TRUE(allclose(out.at(1), ys));
    }
  }
}

TEST(ControlFlowTrace, ReverseScanAndMapReplay) {
  const st::Tensor xs = st::tensor({0.5, 0.1, -1.0, -0.3, 0.2, 0.4}, {3, 2});
  auto suffix = [](const st::Tensor& v) {
    return st::scan(
        [](const st::Tensor& c, const st::Tensor& x) {
          return std::pair{c + x, c * x};
        },
        st::zeros({2}, st::kFloat64), v, {.reverse = true});
  };
  const st::Graph g = st::trace(suffix)(xs);
  const st::Tensor other = xs * -2.0 + 1.0;
  st::Tensor c = st::zeros({2}, st::kFloat64);
  std::vector<st::Tensor> ys(3);
  for (int64_t t = 2; t >= 0; --t) {
    ys[static_cast<size_t>(t)] = c * other.select(0, t);
    c = c + other.select(0, t);
  }
  const std::vector<st::Tensor> out = g(other);
  EXPECT_TRUE(allclose(out.at(0), c));
  EXPECT_TRUE(allclose(out.at(1), st::stack(ys, 0)));

  auto norms = [](const st::Tensor& v) {
    return st::map([](const st::Tensor& x) { return x.pow(2.0).sum().sqrt(); }, v);
  };
  const st::Graph m = st::trace(norms)(xs);
  EXPECT_EQ(m.op_names(), std::vector<std::string>{"strata::map"}) << m.to_string();
  const st::Tensor replayed = m(other).at(0);
  ASSERT_EQ(replayed.dim(), 1);
  ASSERT_EQ(replayed.size(0), 3);
  for (int64_t t = 0; t < 3; ++t) {
    const std::vector<double> row = other.select(0, t).to_vector<double>();
    EXPECT_NEAR(replayed.select(0, t).item<double>(), std::hypot(row[0], row[1]), 1e-12) << t;
  }
}

TEST(ControlFlowTrace, FakeModeRunsEveryBodysShapesAndChecksTheBranchesAgree) {
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  const st::Tensor w = st::tensor({0.1, 0.2, 0.3}, {3});
  const st::Graph g = st::trace(branchy, {.mode = st::TraceMode::Fake})(x, w);
  EXPECT_EQ(count_ops(g.op_names(), "strata::cond"), 1) << g.to_string();
  EXPECT_TRUE(allclose(g(-x, w).at(0), branchy_with_if(-x, w)));
  const st::Graph loop = st::trace(grow, {.mode = st::TraceMode::Fake})(x, st::tensor({1.5}, {}));
  const Carry ref = grow_with_loop(x * 0.5, st::tensor({1.2}, {}));
  EXPECT_TRUE(allclose(loop(x * 0.5, st::tensor({1.2}, {})).at(0), ref.first));
  const st::Tensor xs = st::tensor({0.5, 0.1, -1.0, -0.3, 0.2, 0.4, -0.5, 0.1}, {4, 2});
  const st::Graph scanned = st::trace(rnn, {.mode = st::TraceMode::Fake})(
      st::zeros({2}, st::kFloat64), xs, w.narrow(0, 0, 2));
  const auto [h, ys] = rnn_with_loop(st::zeros({2}, st::kFloat64), -xs, w.narrow(0, 0, 2));
  const std::vector<st::Tensor> out = scanned(st::zeros({2}, st::kFloat64), -xs, w.narrow(0, 0, 2));
  EXPECT_TRUE(allclose(out.at(0), h));
  EXPECT_TRUE(allclose(out.at(1), ys));

  auto mismatched = [](const st::Tensor& v) {
    return st::cond(
        v.sum() > 0.0, [](const st::Tensor& a) { return a; },
        [](const st::Tensor& a) { return a.sum(); }, v);
  };
  for (st::TraceMode mode : {st::TraceMode::Fake, st::TraceMode::Real}) {
    expect_contains(error_message([&] { st::trace(mismatched, {.mode = mode})(x); }),
                    {"strata::cond", "leaf 0", "shape", "true_fn has [3]", "false_fn has []"});
  }
  auto grows = [](const st::Tensor& v) {
    return st::while_loop([](const st::Tensor& c) { return c.sum() < 10.0; },
                          [](const st::Tensor& c) { return c.to(st::kFloat32) * 2.0; }, v);
  };
  expect_contains(error_message([&] { st::trace(grows, {.mode = st::TraceMode::Fake})(x); }),
                  {"strata::while_loop", "leaf 0", "dtype", "Float64", "Float32"});
}

TEST(ControlFlowTrace, AFunctionThatWritesItsInputIsRefusedAndFunctionalizeRecordsIt) {
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  auto writes = [](const st::Tensor& v) {
    return st::cond(
        v.sum() > 0.0, [](const st::Tensor& a) { return st::Tensor(a.add_(a)) * 2.0; },
        [](const st::Tensor& a) { return a * 3.0; }, v);
  };
  expect_contains(
      error_message([&] { st::trace(writes)(x.clone()); }),
      {"strata::cond", "true_fn", "writes its argument leaf 0", "add_", "functionalize"});
  auto writes_captured = [](const st::Tensor& v) {
    const st::Tensor acc = v * 1.0;
    return st::map(
        [&](const st::Tensor& a) {
          acc.select(0, 0).mul_(a);
          return a + acc.sum();
        },
        v);
  };
  expect_contains(error_message([&] { st::trace(writes_captured)(x); }),
                  {"strata::map", "f writes captured tensor 0", "mul_"});
  // Under functionalize the body runs at the functionalize level, its write
  // functionalized like any other; trace() of that refuses, as the choice of
  // branch would be this run's.
  auto writes_with_if = [](const st::Tensor& v) {
    return v.sum().item<double>() > 0 ? st::Tensor(v.add_(v)) * 2.0 : v * 3.0;
  };
  for (const st::Tensor& input : {x, -x}) {
    const st::Tensor copy = input.clone();
    const st::Tensor out = st::functionalize(writes)(copy);
    const st::Tensor expected_input = input.clone();
    EXPECT_TRUE(allclose(out, writes_with_if(expected_input))) << input;
    EXPECT_TRUE(allclose(copy, expected_input)) << "the write reaches the input at the end";
  }
  auto writes_captured_then_reads = [](const st::Tensor& v) {
    const st::Tensor acc = v * 1.0;
    const st::Tensor out = st::map(
        [&](const st::Tensor& a) {
          acc.select(0, 0).mul_(a);
          return a + acc.sum();
        },
        v);
    return out + acc.sum();
  };
  EXPECT_TRUE(
      allclose(st::functionalize(writes_captured_then_reads)(x), writes_captured_then_reads(x)));
  // Traced inside functionalize the branches run on new roots of the level,
  // whose write could not reach the caller's tensor: refused.
  expect_contains(error_message([&] { st::trace(st::functionalize(writes))(x.clone()); }),
                  {"strata::cond", "true_fn", "writes its argument operand leaf 0"});
}

TEST(ControlFlowTrace, InsideATransformCallsAreRecorded) {
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  const st::Tensor w = st::tensor({0.1, 0.2, 0.3}, {3});
  // A per-sample predicate: both branches run and are selected, whatever the data.
  auto per_sample = st::vmap([&](const st::Tensor& v) { return branchy(v, w); });
  const st::Tensor xs = st::stack({x, -x}, 0);
  const st::Graph g = st::trace(per_sample)(xs);
  const st::Tensor other = st::stack({-x * 2.0, x * 2.0}, 0);
  const st::Tensor out = g(other).at(0);
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_TRUE(allclose(out.select(0, b), branchy_with_if(other.select(0, b), w))) << b;
  }
  // A cond inside grad, even inside a scan's step, is recorded with its
  // backward (control_flow_trace_grad_test.cpp): the replay matches grad.
  const st::Tensor steps = st::stack({x.narrow(0, 0, 2), -x.narrow(0, 0, 2)}, 0);
  auto loss = [&](const st::Tensor& v) { return rnn(v, steps, w.narrow(0, 0, 2)).second.sum(); };
  const st::Graph rg = st::trace(st::grad(loss))(x.narrow(0, 0, 2));
  for (const st::Tensor& v : {x.narrow(0, 0, 2), -x.narrow(0, 0, 2) * 3.0}) {
    EXPECT_TRUE(allclose(rg(v).at(0), st::grad(loss)(v)));
  }
  // A scan under grad unrolls: its ops do not depend on the data.
  auto plain = [&](const st::Tensor& v) {
    return st::scan(
               [](const st::Tensor& c, const st::Tensor& e) {
                 return std::pair{c * e.sin(), c};
               },
               v, st::stack({x, -x}, 0))
        .first.sum();
  };
  const st::Graph dg = st::trace(st::grad(plain))(w);
  EXPECT_TRUE(allclose(dg(w * 2.0).at(0), st::grad(plain)(w * 2.0)));
  // Inside vmap a while_loop is one node (control_flow_trace_lowered_test.cpp).
  const st::Graph lg = st::trace(
      st::vmap([](const st::Tensor& v) { return grow(v, st::tensor({1.5}, {})).first; }))(xs.abs());
  EXPECT_EQ(count_ops(lg.op_names(), "strata::while_loop"), 1) << lg.to_string();
}

}  // namespace
