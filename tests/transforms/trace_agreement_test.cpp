// trace against its neighbours: core_decompositions() decomposes the composite-worthy
// ops (the graph keeps none of them and replays the same), and the op sequence of
// STRATA_SHOW_DISPATCH_TRACE agrees with the graph's.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const Graph& g) {
  ASSERT_EQ(got.size(), want.size()) << g.to_string();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(allclose(got[i], want[i])) << g.to_string();
}

Tensor composite_ops(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& m,
                     const Tensor& target) {
  const Tensor h = nn::linear(x, w, b);                                   // [4, 3]
  const Tensor n = nn::layer_norm(h, {3}, b.sin(), b);                    // [4, 3]
  const Tensor s = nn::softmax(n, 1) + nn::log_softmax(n, 0);             // [4, 3]
  const Tensor a = addmm(target, s, m, 0.5, 2.0) + addmm(target, s, m);  // [4, 2]
  return nn::mse_loss(a, target) + nn::mse_loss(a, target, nn::Reduction::Sum) +
         nn::mse_loss(a, target, nn::Reduction::None).sum() + nn::softmax(x.sum(), 0);
}

TEST(TraceDecompositions, CoreDecomposesTheCompositeWorthyOps) {
  const std::vector<std::string> decomposed = {"strata::linear",   "strata::layer_norm",
                                               "strata::softmax",  "strata::log_softmax",
                                               "strata::addmm",    "strata::mse_loss"};
  Generator gen(11);
  const auto inputs = [&] {
    return std::vector<Tensor>{randn({4, 5}, gen, kFloat64), randn({3, 5}, gen, kFloat64),
                               randn({3}, gen, kFloat64), randn({3, 2}, gen, kFloat64),
                               randn({4, 2}, gen, kFloat64)};
  };
  const std::vector<Tensor> in = inputs();
  const auto f = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& m,
                    const Tensor& t) { return composite_ops(x, w, b, m, t); };
  const DecompositionTable core = core_decompositions();
  const Graph whole = trace(f)(in[0], in[1], in[2], in[3], in[4]);
  const Graph g = trace(f, {.decompositions = core})(in[0], in[1], in[2], in[3], in[4]);
  const std::vector<std::string> whole_ops = whole.op_names();
  const std::vector<std::string> ops = g.op_names();
  for (const std::string& name : decomposed) {
    EXPECT_TRUE(core.contains(name)) << name;
    EXPECT_NE(std::find(whole_ops.begin(), whole_ops.end(), name), whole_ops.end()) << name;
    EXPECT_EQ(std::find(ops.begin(), ops.end(), name), ops.end()) << name << "\n" << g.to_string();
  }
  const std::vector<Tensor> again = inputs();
  const std::vector<Tensor> eager = {f(again[0], again[1], again[2], again[3], again[4])};
  expect_same(g(again[0], again[1], again[2], again[3], again[4]), eager, g);
  expect_same(whole(again[0], again[1], again[2], again[3], again[4]), eager, whole);
}

TEST(TraceDecompositions, DecompositionsKeepTheOpsErrors) {
  const DecompositionTable core = core_decompositions();
  const Tensor x = ones({2, 3});
  const auto bad_linear = [](const Tensor& a) { return nn::linear(a, ones({4, 2})); };
  EXPECT_THROW(trace(bad_linear, {.decompositions = core})(x), Error);
  const auto bad_addmm = [](const Tensor& a) { return addmm(a, a, a); };
  EXPECT_THROW(trace(bad_addmm, {.decompositions = core})(x), Error);
}

// The ops of a dispatch trace that a graph records: the outermost calls handled by
// a key below every transform (a backend or a factory's BackendSelect), in order.
std::vector<std::string> backend_calls(const std::string& text) {
  std::vector<std::string> ops;
  std::vector<std::pair<size_t, bool>> open;  // (indent, counted) of the enclosing calls
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t indent = line.find('[');
    while (!open.empty() && open.back().first >= indent) open.pop_back();
    const size_t name_at = line.find("] ") + 2;
    const size_t key_at = line.find(" key=", name_at);
    const std::string key = line.substr(key_at + 5, line.find(' ', key_at + 5) - key_at - 5);
    const bool transform = key == "DynamicLayerFront" || key == "DynamicLayerBack" ||
                           key == "Batched" || key == "AutogradCPU" || key == "AutogradCUDA" ||
                           key == "Functionalize" || key == "Mode";
    bool inside_counted = false;
    for (const auto& [at, counted] : open) inside_counted = inside_counted || counted;
    const bool counted = !transform && !inside_counted;
    if (counted) ops.push_back(line.substr(name_at, key_at - name_at));
    open.emplace_back(indent, counted || inside_counted);
  }
  return ops;
}

template <class F, class... Args>
std::vector<std::string> dispatch_trace_ops(const F& f, const Args&... args) {
  std::ostringstream out;
  set_dispatch_trace_stream(&out);
  set_dispatch_trace(true);
  try {
    f(args...);
  } catch (...) {
    set_dispatch_trace(false);
    set_dispatch_trace_stream(nullptr);
    throw;
  }
  set_dispatch_trace(false);
  set_dispatch_trace_stream(nullptr);
  return backend_calls(out.str());
}

// The one difference, by design: the backward engine sums two gradients of a value
// in place (add_) when nothing else holds the sum, and under trace the recorder
// holds every value it has seen (so no address is reused), so there the same sum
// is an add.
std::vector<std::string> as_recorded(std::vector<std::string> ops) {
  std::replace(ops.begin(), ops.end(), std::string("strata::add_.Tensor"),
               std::string("strata::add.Tensor"));
  return ops;
}

Tensor poly(const Tensor& x) {
  const Tensor s = x.sin();
  return (s * x.matmul(x)).sum();
}
Tensor mlp_loss(const Tensor& w, const Tensor& x, const Tensor& y) {
  return nn::mse_loss(nn::linear(x, w).tanh(), y);
}

TEST(TraceDispatchTrace, TheDispatchTraceShowsTheGraphsOps) {
  const Tensor x = tensor({0.3, -0.7, 1.1}, {3});
  const Tensor xs = tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});
  Generator gen(3);
  const Tensor w = randn({4, 3}, gen), xb = randn({5, 3}, gen), y = randn({5, 4}, gen);
  const auto per_sample = vmap(grad(mlp_loss), {.in_dims = {none, 0, 0}});

  const std::vector<std::string> plain = dispatch_trace_ops(poly, x);
  EXPECT_EQ(plain, trace(poly)(x).op_names());
  EXPECT_EQ(plain, (std::vector<std::string>{"strata::sin", "strata::matmul", "strata::mul.Tensor",
                                             "strata::sum"}));
  // grad and hessian: the backward (and double-backward) formulas' ops, in order,
  // with the sums of x's gradients (x meets sin, and matmul twice).
  const std::vector<std::string> backward = dispatch_trace_ops(grad(poly), x);
  EXPECT_EQ(std::count(backward.begin(), backward.end(), "strata::add_.Tensor"), 2);
  EXPECT_EQ(as_recorded(backward), trace(grad(poly))(x).op_names());
  const std::vector<std::string> second = dispatch_trace_ops(hessian(poly), x);
  EXPECT_GT(second.size(), backward.size());
  EXPECT_NE(std::find(second.begin(), second.end(), "strata::eye"), second.end());
  EXPECT_EQ(as_recorded(second), trace(hessian(poly))(x).op_names());
  EXPECT_EQ(dispatch_trace_ops(vmap(grad(poly)), xs), trace(vmap(grad(poly)))(xs).op_names());
  EXPECT_EQ(dispatch_trace_ops(per_sample, w, xb, y), trace(per_sample)(w, xb, y).op_names());
}

}  // namespace
}  // namespace strata
