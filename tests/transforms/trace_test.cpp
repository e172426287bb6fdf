// trace: the graph of the ops a (transformed) function runs, replayed on new
// inputs against the eager function, its text and its round trip, decompositions,
// fake mode, the passes and random ops.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;

Tensor poly(const Tensor& x) { return (x.sin() * x * x).sum(); }
Tensor scalar_poly(const Tensor& x) { return x.sin() * x * x; }

Tensor mlp_loss(const Tensor& w, const Tensor& x, const Tensor& y) {
  return nn::mse_loss(nn::linear(x, w).tanh(), y);
}

void expect_replays(const Graph& g, const std::vector<Tensor>& eager,
                    const std::vector<Tensor>& replayed) {
  ASSERT_EQ(eager.size(), replayed.size()) << g.to_string();
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(allclose(replayed[i], eager[i])) << g.to_string();
}

bool has_op(const Graph& g, const std::string& name) {
  const std::vector<std::string> ops = g.op_names();
  return std::find(ops.begin(), ops.end(), name) != ops.end();
}

TEST(Trace, RecordsTheOpsOfASimpleFunction) {
  const Tensor x = tensor({0.5, -1.0, 2.0}, {3});
  const Graph g = trace([](const Tensor& a, const Tensor& b) { return (a.sin() * b).sum(); })(x, x);
  EXPECT_EQ(g.op_names(), (std::vector<std::string>{"strata::sin", "strata::mul.Tensor", "strata::sum"}))
      << g.to_string();
  EXPECT_EQ(g.inputs().size(), 2u);
  const Tensor a = tensor({1.0, 2.0, 3.0}, {3});
  const Tensor b = tensor({-1.0, 0.5, 4.0}, {3});
  expect_replays(g, {(a.sin() * b).sum()}, g(a, b));
}

TEST(Trace, CommonSignaturesReplayAsTypedCalls) {
  const auto f = [](const Tensor& a, const Tensor& b) {
    return (a.sin() * b + b).sum({0}, false).softmax(0);
  };
  const Tensor x = tensor({0.5, -1.0, 2.0, 0.25, 1.5, -0.5}, {2, 3});
  const Graph g = trace(f)(x, x);
  ASSERT_FALSE(g.nodes().empty());
  for (const GraphNode& node : g.nodes()) {
    EXPECT_NE(node.typed, nullptr) << node.op.operator_name().to_string() << " replays boxed";
  }
  const Tensor a = tensor({1.0, 2.0, 3.0, -1.0, 0.0, 0.5}, {2, 3});
  const Tensor b = tensor({-1.0, 0.5, 4.0, 2.0, 1.0, -3.0}, {2, 3});
  expect_replays(g, {f(a, b)}, g(a, b));
}

// The recorder takes typed calls unboxed (Note [Typed mode calls]); under a mode
// that takes boxed calls only, every call reaches it boxed. Both must record the
// same graph: tensors, optional and list arguments, scalars, generators, in-place
// ops and several or list results.
TEST(Trace, TypedAndBoxedCallsRecordTheSameGraph) {
  const auto f = [](const Tensor& w, const Tensor& x, const Tensor& b) {
    const Tensor h = nn::linear(x, w, b).tanh() + nn::linear(x, w);
    const auto [values, indices] = h.max(1, false);
    const Tensor t = add(h, values.unsqueeze(1), 0.5);
    t.mul_(h);
    const std::vector<Tensor> parts = cat({t, h}, 0).split(2, 0);
    Generator gen(11);
    return std::vector<Tensor>{parts[1] + randn({2, 3}, gen), indices};
  };
  const Tensor w = tensor({0.5, -1.0, 2.0, 0.25, 1.5, -0.5}, {3, 2});
  const Tensor x = tensor({1.0, 2.0, -1.0, 0.5}, {2, 2});
  const Tensor b = tensor({0.1, 0.2, 0.3}, {3});
  const Graph typed = trace(f)(w, x, b);
  std::string boxed_text;
  {
    const DispatchModeGuard boxed_only(std::make_shared<DispatchMode>());
    boxed_text = trace(f)(w, x, b).to_string();
  }
  EXPECT_EQ(typed.to_string(), boxed_text);
  EXPECT_TRUE(has_op(typed, "strata::mul_.Tensor")) << typed.to_string();
  expect_replays(typed, f(w, x, b), typed(w, x, b));
  const auto per_sample = vmap(grad(mlp_loss), {.in_dims = {none, 0, 0}});
  const Tensor y = tensor({0.5, -0.5}, {2, 1});
  const Tensor w1 = tensor({0.5, -1.0}, {1, 2});
  const std::string typed_vmap_grad = trace(per_sample)(w1, x, y).to_string();
  const DispatchModeGuard boxed_only(std::make_shared<DispatchMode>());
  EXPECT_EQ(trace(per_sample)(w1, x, y).to_string(), typed_vmap_grad);
}

TEST(Trace, TensorListArgumentsReplayBoxed) {
  const auto f = [](const Tensor& a, const Tensor& b) { return cat({a.exp(), b}, 0); };
  const Tensor x = tensor({0.5, -1.0}, {2});
  const Graph g = trace(f)(x, x);
  ASSERT_TRUE(has_op(g, "strata::cat")) << g.to_string();
  for (const GraphNode& node : g.nodes()) {
    if (node.op.operator_name().to_string() == "strata::cat") {
      EXPECT_EQ(node.typed, nullptr);
    }
  }
  const Tensor a = tensor({1.0, 2.0}, {2});
  const Tensor b = tensor({-3.0, 0.25}, {2});
  expect_replays(g, {f(a, b)}, g(a, b));
}

TEST(Trace, ReplaysGradVmapAndTheJacobiansOnNewInputs) {
  const Tensor x = tensor({0.3, -0.7, 1.1}, {3});
  const Tensor x2 = tensor({1.5, 0.2, -2.0}, {3});
  const Tensor xs = tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});
  const Tensor xs2 = tensor({-1.0, 2.0, 0.5, 0.25, -0.3, 1.7}, {2, 3});
  expect_replays(trace(grad(poly))(x), {grad(poly)(x2)}, trace(grad(poly))(x)(x2));
  expect_replays(trace(vmap(poly))(xs), {vmap(poly)(xs2)}, trace(vmap(poly))(xs)(xs2));
  expect_replays(trace(jacrev(grad(poly)))(x), {jacrev(grad(poly))(x2)},
                 trace(jacrev(grad(poly)))(x)(x2));
  expect_replays(trace(jacfwd(grad(poly)))(x), {jacfwd(grad(poly))(x2)},
                 trace(jacfwd(grad(poly)))(x)(x2));
  expect_replays(trace(hessian(poly))(x), {hessian(poly)(x2)}, trace(hessian(poly))(x)(x2));
  expect_replays(trace(vmap(grad(poly)))(xs), {vmap(grad(poly))(xs2)},
                 trace(vmap(grad(poly)))(xs)(xs2));
  expect_replays(trace(vmap(hessian(poly)))(xs), {vmap(hessian(poly))(xs2)},
                 trace(vmap(hessian(poly)))(xs)(xs2));
  const Tensor s = tensor({0.7}, {});
  const Tensor s2 = tensor({-1.3}, {});
  const auto g3 = grad(grad(grad(scalar_poly)));
  expect_replays(trace(g3)(s), {g3(s2)}, trace(g3)(s)(s2));
}

TEST(Trace, TheGraphOfVmapGradIsFlatAndReplaysTheMlp) {
  Generator gen(3);
  const Tensor w = randn({4, 5}, gen, kFloat64);
  const Tensor xs = randn({6, 5}, gen, kFloat64);
  const Tensor ys = randn({6, 4}, gen, kFloat64);
  const auto per_sample = vmap(grad(mlp_loss), {.in_dims = {none, 0, 0}});
  const Graph g = trace(per_sample)(w, xs, ys);
  const Tensor w2 = randn({4, 5}, gen, kFloat64);
  const Tensor xs2 = randn({6, 5}, gen, kFloat64);
  const Tensor ys2 = randn({6, 4}, gen, kFloat64);
  expect_replays(g, {per_sample(w2, xs2, ys2)}, g(w2, xs2, ys2));
  // Every node is an ordinary op on plain tensors: replay (with no transform
  // running) works with the layer stack empty and no wrapper in sight.
  for (const GraphNode& node : g.nodes()) EXPECT_TRUE(node.kernel != nullptr);
}

TEST(Trace, ReplayInsideATransformIsDifferentiable) {
  const Tensor x = tensor({0.3, -0.7, 1.1}, {3});
  const Graph g = trace(poly)(x);
  const auto replayed = [&](const Tensor& a) { return g(a)[0]; };
  EXPECT_TRUE(allclose(grad(replayed)(x), grad(poly)(x)));
}

TEST(Trace, TextIsDeterministicAndRoundTrips) {
  const Tensor xs = tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});
  const Tensor c = tensor({2.0, -1.0, 0.5}, {3});
  const auto f = [&](const Tensor& a) { return vmap(grad(poly))(a * c + 1.5); };
  const Graph g = trace(f)(xs);
  const std::string text = g.to_string();
  EXPECT_EQ(text, trace(f)(xs).to_string());
  EXPECT_NE(text.find("= input"), std::string::npos) << text;
  EXPECT_NE(text.find("= constant [2.0, -1.0, 0.5]"), std::string::npos) << text;
  EXPECT_NE(text.find("Float64[2, 3]"), std::string::npos) << text;
  const Graph back = Graph::parse(text);
  EXPECT_EQ(back.to_string(), text);
  const Tensor xs2 = tensor({-1.0, 2.0, 0.5, 0.25, -0.3, 1.7}, {2, 3});
  expect_replays(back, g(xs2), back(xs2));
  expect_replays(back, {f(xs2)}, back(xs2));
}

Tensor classifier_loss(const Tensor& w, const Tensor& x, const Tensor& labels) {
  return nn::cross_entropy(x.matmul(w.t()).tanh(), labels);
}

TEST(Trace, CoreDecompositionsLeaveOnlyPrimitives) {
  Generator gen(5);
  const Tensor w = randn({4, 5}, gen, kFloat64);
  const Tensor x = randn({3, 5}, gen, kFloat64);
  const Tensor labels = tensor(std::vector<int64_t>{0, 3, 1}, {3});
  const Graph whole = trace(classifier_loss)(w, x, labels);
  EXPECT_TRUE(has_op(whole, "strata::cross_entropy")) << whole.to_string();
  const DecompositionTable core = core_decompositions();
  ASSERT_TRUE(core.contains("strata::cross_entropy"));
  ASSERT_TRUE(core.contains("strata::matmul"));
  const Graph g = trace(classifier_loss, {.decompositions = core})(w, x, labels);
  for (const std::string& name : g.op_names()) EXPECT_FALSE(core.contains(name)) << name;
  const Tensor w2 = randn({4, 5}, gen, kFloat64);
  expect_replays(g, {classifier_loss(w2, x, labels)}, g(w2, x, labels));
  // The same for the backward graph.
  const Graph gg = trace(grad(classifier_loss), {.decompositions = core})(w, x, labels);
  for (const std::string& name : gg.op_names()) EXPECT_FALSE(core.contains(name)) << name;
  expect_replays(gg, {grad(classifier_loss)(w2, x, labels)}, gg(w2, x, labels));
}

TEST(Trace, AUserDecompositionReplacesTheOpAndEraseKeepsItWhole) {
  DecompositionTable table;
  table.set<Tensor(const Tensor&, const Tensor&, int64_t)>(
      "strata::mse_loss", [](const Tensor& a, const Tensor& b, int64_t) { return ((a - b) * (a - b)).mean(); });
  const Tensor a = tensor({1.0, 2.0, 3.0}, {3});
  const Tensor b = tensor({0.0, 2.5, 1.0}, {3});
  const auto f = [](const Tensor& p, const Tensor& q) { return nn::mse_loss(p, q); };
  const Graph g = trace(f, {.decompositions = table})(a, b);
  EXPECT_FALSE(has_op(g, "strata::mse_loss")) << g.to_string();
  EXPECT_TRUE(has_op(g, "strata::mean")) << g.to_string();
  expect_replays(g, {f(b, a)}, g(b, a));
  EXPECT_TRUE(table.erase("strata::mse_loss"));
  EXPECT_TRUE(has_op(trace(f, {.decompositions = table})(a, b), "strata::mse_loss"));
}

TEST(Trace, ACopiedDecompositionTableIsItsOwn) {
  const DecompositionTable core = core_decompositions();
  DecompositionTable copy = core;
  EXPECT_TRUE(copy.erase("strata::linear"));
  EXPECT_TRUE(core.contains("strata::linear"));
  EXPECT_EQ(copy.size() + 1, core.size());
  DecompositionTable empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_FALSE(empty.contains("strata::linear"));
  EXPECT_FALSE(empty.erase("strata::linear"));
  empty = copy;
  EXPECT_FALSE(empty.contains("strata::linear"));
  EXPECT_TRUE(empty.contains("strata::cross_entropy"));
  copy = DecompositionTable();
  EXPECT_EQ(copy.size(), 0u);
  EXPECT_EQ(empty.size() + 1, core.size());
}

TEST(Trace, ACallThatThrowsLeavesNoNodeAndTheNextNodesArgumentsAreTheirOwn) {
  const auto f = [](const Tensor& x) {
    EXPECT_THROW((void)x.matmul(x), Error);
    return x.sin() * x;
  };
  const Tensor x = tensor({0.5, -1.0, 2.0, 0.25, 1.5, -0.5}, {2, 3});
  const Graph g = trace(f)(x);
  ASSERT_EQ(g.op_names(), (std::vector<std::string>{"strata::sin", "strata::mul.Tensor"})) << g.to_string();
  const ArrayRef<NodeArg> sin_args = g.args(g.nodes()[0]);
  ASSERT_EQ(sin_args.size(), 1u);
  EXPECT_EQ(sin_args[0].kind, NodeArg::Kind::Value);
  EXPECT_EQ(sin_args[0].values[0], g.inputs()[0]);
  EXPECT_EQ(g.args(g.nodes()[1]).size(), 2u);
  const Tensor y = tensor({1.0, 2.0, 3.0, -1.0, 0.0, 0.5}, {2, 3});
  expect_replays(g, {y.sin() * y}, g(y));
}

TEST(Trace, FakeModeGivesTheRealShapesWithoutData) {
  Generator gen(9);
  const Tensor w = randn({4, 5}, gen, kFloat64);
  const Tensor xs = randn({6, 5}, gen, kFloat64);
  const Tensor ys = randn({6, 4}, gen, kFloat64);
  const auto per_sample = vmap(grad(mlp_loss), {.in_dims = {none, 0, 0}});
  const Graph real = trace(per_sample)(w, xs, ys);
  const Graph fake = trace(per_sample, {.mode = TraceMode::Fake})(w, xs, ys);
  EXPECT_EQ(fake.to_string(), real.to_string());
  expect_replays(fake, real(w, xs, ys), fake(w, xs, ys));
  const auto transposed = [](const Tensor& m) { return m.t().reshape({-1}).sin(); };
  const Tensor m = randn({3, 2}, gen, kFloat64);
  const Graph tf = trace(transposed, {.mode = TraceMode::Fake})(m);
  EXPECT_EQ(tf.to_string(), trace(transposed)(m).to_string());
  expect_replays(tf, {transposed(m)}, tf(m));
}

TEST(Trace, PassesRemoveDeadAndRepeatedWorkAndKeepResults) {
  const auto f = [](const Tensor& x) {
    const Tensor unused = x.cos();
    (void)unused;
    return x.sin() * x.sin();
  };
  const Tensor x = tensor({0.2, 0.4}, {2});
  const Graph g = trace(f)(x);
  EXPECT_EQ(g.nodes().size(), 4u) << g.to_string();
  const Graph dce = eliminate_dead_code(g);
  EXPECT_FALSE(has_op(dce, "strata::cos")) << dce.to_string();
  EXPECT_EQ(dce.nodes().size(), 3u) << dce.to_string();
  const Graph opt = g.optimized();
  EXPECT_EQ(opt.op_names(), (std::vector<std::string>{"strata::sin", "strata::mul.Tensor"}))
      << opt.to_string();
  const Tensor x2 = tensor({-1.0, 3.0}, {2});
  expect_replays(opt, {f(x2)}, opt(x2));
  expect_replays(dce, {f(x2)}, dce(x2));
}

TEST(Trace, RandomOpsReplayTheTracedNumbers) {
  Generator gen(11);
  const auto f = [&](const Tensor& x) { return x + randn({3}, gen, kFloat64); };
  const Tensor x = zeros({3}, kFloat64);
  const uint64_t before = gen.offset();
  const Graph g = trace(f)(x);
  const uint64_t after = gen.offset();
  EXPECT_GT(after, before);
  // The traced draw, recomputed from the generator's state before it.
  Generator same(11);
  same.set_offset(before);
  const Tensor traced_noise = randn({3}, same, kFloat64);
  expect_replays(g, {traced_noise}, g(x));
  expect_replays(g, {traced_noise + 1.0}, g(x + 1.0));
  EXPECT_EQ(gen.offset(), after) << "replay must not draw from the caller's generator";
  // CSE keeps two draws apart.
  const auto two = [&](const Tensor& x0) { return x0 + randn({3}, gen, kFloat64) - randn({3}, gen, kFloat64); };
  const Graph g2 = trace(two)(x).optimized();
  const std::vector<std::string> ops = g2.op_names();
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "strata::randn"), 2) << g2.to_string();
}

}  // namespace
}  // namespace strata
