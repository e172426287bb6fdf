// vmap: in_dims / out_dims, trees, chunk_size, randomness, nesting and the
// compositions with grad, each against a loop over the batch.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include "tests/test_support.h"

namespace st = strata;

namespace {

// Stacks f applied to each slice of xs along dim 0 (the reference).
template <class F>
st::Tensor loop_over(const F& f, const st::Tensor& xs) {
  std::vector<st::Tensor> outs;
  for (int64_t b = 0; b < xs.sizes()[0]; ++b) outs.push_back(f(xs.select(0, b)));
  return st::stack(outs, 0);
}

TEST(Vmap, UnaryAndBinaryMatchALoop) {
  st::Generator gen(1);
  const st::Tensor xs = st::randn({4, 3}, gen, st::kFloat64);
  auto f = [](const st::Tensor& x) { return (x.sin() * x + x * x).exp(); };
  EXPECT_TRUE(st::testing::allclose(st::vmap(f)(xs), loop_over(f, xs)));
}

TEST(Vmap, BroadcastsAnUnbatchedArgumentOfHigherRank) {
  st::Generator gen(2);
  const st::Tensor xs = st::randn({5, 3}, gen, st::kFloat64);
  const st::Tensor m = st::randn({2, 3}, gen, st::kFloat64);
  auto f = [](const st::Tensor& x, const st::Tensor& y) { return x * y; };
  const st::Tensor out = st::vmap(f, {.in_dims = {0, st::none}})(xs, m);
  EXPECT_TRUE(
      st::testing::allclose(out, loop_over([&](const st::Tensor& x) { return x * m; }, xs)));
}

TEST(Vmap, BatchDimAtTheEndAndOutDimLast) {
  st::Generator gen(3);
  const st::Tensor xs = st::randn({3, 4}, gen, st::kFloat64);  // batch along dim 1
  auto f = [](const st::Tensor& x) { return x.tanh() + 1.0; };
  const st::Tensor out = st::vmap(f, {.in_dims = {-1}, .out_dims = {-1}})(xs);
  EXPECT_TRUE(st::testing::allclose(out, xs.tanh() + 1.0));
}

TEST(Vmap, NestedVmapOfABinaryOp) {
  st::Generator gen(4);
  const st::Tensor a = st::randn({2, 3, 4}, gen, st::kFloat64);
  const st::Tensor b = st::randn({3, 4}, gen, st::kFloat64);
  auto g = [](const st::Tensor& x, const st::Tensor& y) { return x.sin() * y + x; };
  auto inner = st::vmap(g);  // over dim 0 of both: 3
  const st::Tensor out = st::vmap(inner, {.in_dims = {0, st::none}})(a, b);
  EXPECT_TRUE(st::testing::allclose(out, a.sin() * b + a));
}

TEST(Vmap, ChunkSizeGivesTheSameResult) {
  st::Generator gen(5);
  const st::Tensor xs = st::randn({7, 2}, gen, st::kFloat64);
  auto f = [](const st::Tensor& x) { return x.exp() - x; };
  EXPECT_TRUE(st::testing::allclose(st::vmap(f, {.chunk_size = 3})(xs), st::vmap(f)(xs)));
}

TEST(Vmap, BatchSizesThatDisagreeAreAnError) {
  auto f = [](const st::Tensor& x, const st::Tensor& y) { return x + y; };
  EXPECT_THROW(
      {
        try {
          st::vmap(f)(st::zeros({3, 2}), st::zeros({4, 2}));
        } catch (const st::Error& e) {
          EXPECT_NE(std::string(e.what()).find("batch sizes disagree"), std::string::npos)
              << e.what();
          throw;
        }
      },
      st::Error);
}

}  // namespace

namespace {

TEST(VmapCompose, VmapOfGradIsPerSampleGradients) {
  st::Generator gen(6);
  const st::Tensor xs = st::randn({4, 3}, gen, st::kFloat64);
  auto f = [](const st::Tensor& x) { return (x.sin() * x).sum(); };
  const st::Tensor out = st::vmap(st::grad(f))(xs);
  EXPECT_TRUE(st::testing::allclose(out, loop_over(st::grad(f), xs)));
}

TEST(VmapCompose, GradOfVmapOfASummedOutput) {
  st::Generator gen(7);
  const st::Tensor xs = st::randn({4, 3}, gen, st::kFloat64);
  auto per_sample = [](const st::Tensor& x) { return x.sin() * x; };
  auto f = [&](const st::Tensor& x) { return st::vmap(per_sample)(x).sum(); };
  const st::Tensor expected = xs.cos() * xs + xs.sin();
  EXPECT_TRUE(st::testing::allclose(st::grad(f)(xs), expected));
}

TEST(VmapFallback, AnOpWithoutARuleLoopsAndCanBeSwitchedOff) {
  st::Generator gen(8);
  const st::Tensor xs = st::randn({3, 4}, gen, st::kFloat64);
  auto f = [](const st::Tensor& x) { return x.logsumexp({0}); };
  EXPECT_TRUE(st::testing::allclose(st::vmap(f)(xs), loop_over(f, xs)));
  st::batching::set_loop_fallback_enabled(false);
  const std::string message = st::testing::error_message([&] { st::vmap(f)(xs); });
  st::batching::set_loop_fallback_enabled(true);
  st::testing::expect_contains(message, {"logsumexp", "no batching rule", "vmap(level"});
}

}  // namespace
