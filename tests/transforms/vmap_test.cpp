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

}  // namespace

namespace {

using Params = std::map<std::string, st::Tensor>;

TEST(VmapTrees, MapArgumentsAndTupleResultsWithOutDimsPerElement) {
  st::Generator gen(9);
  const Params p{{"a", st::randn({4, 3}, gen, st::kFloat64)},
                 {"b", st::randn({4}, gen, st::kFloat64)}};
  const st::Tensor x = st::randn({3}, gen, st::kFloat64);
  auto f = [](const Params& q, const st::Tensor& v, double scale) {
    return std::tuple{q.at("a") * v * scale, q.at("b").exp()};
  };
  auto [first, second] =
      st::vmap(f, {.in_dims = {0, st::none, st::none}, .out_dims = {-1, 0}})(p, x, 2.0);
  EXPECT_TRUE(st::testing::allclose(first, (p.at("a") * x * 2.0).t()));
  EXPECT_TRUE(st::testing::allclose(second, p.at("b").exp()));
}

TEST(VmapTrees, AnUnbatchedOutputIsBroadcastAlongTheBatch) {
  const st::Tensor xs = st::ones({3, 2}, st::kFloat64);
  const st::Tensor c = st::tensor({1.0, 2.0}, {2});
  auto f = [&](const st::Tensor& x) { return std::pair{x * 2.0, c}; };
  auto [doubled, constant] = st::vmap(f)(xs);
  EXPECT_TRUE(st::testing::allclose(doubled, xs * 2.0));
  EXPECT_TRUE(st::testing::allclose(constant, st::stack({c, c, c}, 0)));
}

TEST(VmapNesting, BatchDimsOfTwoLevelsOnOneTensor) {
  st::Generator gen(10);
  const st::Tensor a = st::randn({2, 3, 4}, gen, st::kFloat64);
  // The inner vmap maps dim 1 of each outer sample [3, 4], i.e. a's dim 2.
  auto g = [](const st::Tensor& v) { return v.sin() * v.sum({0}); };  // v: [3]
  const st::Tensor out = st::vmap(st::vmap(g, {.in_dims = {1}}), {.in_dims = {0}})(a);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      const st::Tensor v = a.select(0, i).select(1, j);
      EXPECT_TRUE(st::testing::allclose(out.select(0, i).select(0, j), g(v)));
    }
  }
}

TEST(VmapCompose, VmapOfVmapOfGrad) {
  st::Generator gen(11);
  const st::Tensor xs = st::randn({2, 3, 4}, gen, st::kFloat64);
  auto f = [](const st::Tensor& x) { return (x.tanh() * x).sum(); };
  const st::Tensor out = st::vmap(st::vmap(st::grad(f)))(xs);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(st::testing::allclose(out.select(0, i), loop_over(st::grad(f), xs.select(0, i))));
  }
}

TEST(VmapCompose, GradOfAFunctionThatVmapsOverCapturedWeights) {
  st::Generator gen(12);
  const st::Tensor w = st::randn({3}, gen, st::kFloat64);
  const st::Tensor xs = st::randn({5, 3}, gen, st::kFloat64);
  auto loss = [&](const st::Tensor& weights) {
    auto per_sample = [&](const st::Tensor& x) { return (x * weights).sum().tanh(); };
    return st::vmap(per_sample)(xs).sum();
  };
  const st::Tensor expected = ((1.0 - ((xs * w).sum({1}, true).tanh().pow(2.0))) * xs).sum({0});
  EXPECT_TRUE(st::testing::allclose(st::grad(loss)(w), expected));
}

TEST(VmapInPlace, AFreshTensorFromABatchedOneTakesInPlaceWrites) {
  const st::Tensor xs = st::arange(6).to(st::kFloat64).reshape({3, 2});
  auto f = [](const st::Tensor& x) {
    st::Tensor out = st::zeros_like(x);
    out.copy_(x * 2.0);
    out.add_(st::ones_like(x));
    return out;
  };
  EXPECT_TRUE(st::testing::allclose(st::vmap(f)(xs), xs * 2.0 + 1.0));
}

TEST(VmapRandomness, SameGivesEverySampleTheSameNumbers) {
  st::Generator gen(13);
  auto f = [&](const st::Tensor& x) { return x + st::randn({4}, gen, st::kFloat64); };
  const st::Tensor out =
      st::vmap(f, {.randomness = st::Randomness::Same})(st::zeros({3, 4}, st::kFloat64));
  EXPECT_TRUE(st::testing::allclose(out.select(0, 1), out.select(0, 0)));
  EXPECT_TRUE(st::testing::allclose(out.select(0, 2), out.select(0, 0)));
}

TEST(VmapRandomness, DifferentGivesEachSampleItsOwnStream) {
  st::Generator gen(14);
  auto f = [&](const st::Tensor& x) { return x + st::randn({4}, gen, st::kFloat64); };
  const st::Tensor out =
      st::vmap(f, {.randomness = st::Randomness::Different})(st::zeros({3, 4}, st::kFloat64));
  EXPECT_FALSE(st::testing::allclose(out.select(0, 1), out.select(0, 0)));
  EXPECT_FALSE(st::testing::allclose(out.select(0, 2), out.select(0, 1)));
}

// Chunks replay the streams of the whole batch: per sample for Different, the one
// draw for Same (batched inputs or not).
TEST(VmapRandomness, DoesNotDependOnTheChunkSize) {
  for (st::Randomness randomness : {st::Randomness::Different, st::Randomness::Same}) {
    auto run = [randomness](int64_t chunk_size) {
      st::Generator gen(15);
      auto f = [&](const st::Tensor& p) {
        return st::bernoulli(p, gen).to(st::kFloat64) + st::randn({2}, gen, st::kFloat64);
      };
      const st::Tensor ps = st::full({7, 2}, 0.5, st::kFloat64);
      st::Tensor out = st::vmap(f, {.randomness = randomness, .chunk_size = chunk_size})(ps);
      // The generator moved on by the same amount whatever the chunking.
      return std::pair{out, st::randn({1}, gen, st::kFloat64)};
    };
    const char* mode = st::batching::to_string(randomness);
    const auto [whole, next_whole] = run(0);
    if (randomness == st::Randomness::Same) {
      EXPECT_TRUE(st::testing::allclose(whole.select(0, 6), whole.select(0, 0)));
    }
    for (int64_t chunk : {1, 3}) {
      const auto [chunked, next_chunked] = run(chunk);
      EXPECT_TRUE(st::testing::allclose(chunked, whole)) << mode << ", chunk_size " << chunk;
      EXPECT_TRUE(st::testing::allclose(next_chunked, next_whole))
          << mode << ", chunk_size " << chunk;
    }
  }
}

TEST(VmapRandomness, SameWithABatchedProbability) {
  st::Generator gen(16);
  // Sample b keeps an element iff u < p_b for one shared u: a higher p keeps a superset.
  const st::Tensor ps =
      st::stack({st::full({64}, 0.2, st::kFloat64), st::full({64}, 0.7, st::kFloat64)}, 0);
  auto f = [&](const st::Tensor& p) { return st::bernoulli(p, gen); };
  const st::Tensor out = st::vmap(f, {.randomness = st::Randomness::Same})(ps);
  const std::vector<double> low = out.select(0, 0).to_vector<double>();
  const std::vector<double> high = out.select(0, 1).to_vector<double>();
  for (size_t i = 0; i < low.size(); ++i) EXPECT_LE(low[i], high[i]) << i;
}

}  // namespace

namespace {

// An op with only a CPU kernel: under vmap it takes the loop fallback.
STRATA_LIBRARY(vmap_test, m) {
  m.def("twice(Tensor self) -> Tensor");
  m.def("twice_(Tensor(a!) self) -> Tensor(a!)");
}
STRATA_LIBRARY_IMPL(vmap_test, CPU, m) {
  m.impl("twice", [](const st::Tensor& self) { return self * 2.0; });
  m.impl("twice_",
         [](const st::Tensor& self) -> const st::Tensor& { return self.copy_(self * 2.0); });
}

st::Tensor twice(const st::Tensor& x) {
  return st::Dispatcher::singleton()
      .findSchemaOrThrow("vmap_test::twice", "")
      .typed<st::Tensor(const st::Tensor&)>()
      .call(x);
}
const st::Tensor& twice_(const st::Tensor& x) {
  return st::Dispatcher::singleton()
      .findSchemaOrThrow("vmap_test::twice_", "")
      .typed<const st::Tensor&(const st::Tensor&)>()
      .call(x);
}

TEST(VmapFallback, LoopsOverTheBatchAndWarnsOncePerOp) {
  const st::Tensor xs = st::arange(6).to(st::kFloat64).reshape({2, 3});
  ::testing::internal::CaptureStderr();
  const st::Tensor first = st::vmap(&twice, {.in_dims = {1}})(xs);
  const st::Tensor second = st::vmap(&twice)(xs);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(st::testing::allclose(first, xs.t() * 2.0));
  EXPECT_TRUE(st::testing::allclose(second, xs * 2.0));
  const std::string expected = "no batching rule for vmap_test::twice;";
  const size_t at = warnings.find(expected);
  ASSERT_NE(at, std::string::npos) << warnings;
  EXPECT_EQ(warnings.find(expected, at + 1), std::string::npos) << "warned twice: " << warnings;
}

TEST(VmapFallback, InPlaceLoopWritesEverySampleOfTheBatchedSelf) {
  const st::Tensor xs = st::arange(6).to(st::kFloat64).reshape({3, 2});
  auto f = [](const st::Tensor& x) {
    st::Tensor y = x.clone();
    twice_(y);
    return y;
  };
  EXPECT_TRUE(
      st::testing::allclose(st::vmap(f, {.in_dims = {-1}, .out_dims = {-1}})(xs), xs * 2.0));
}

TEST(VmapFallback, SwitchedOffItIsAnErrorNamingTheOp) {
  st::batching::set_loop_fallback_enabled(false);
  const std::string message = st::testing::error_message([] {
    st::vmap (&twice)(st::ones({2, 3}, st::kFloat64));
  });
  st::batching::set_loop_fallback_enabled(true);
  st::testing::expect_contains(message, {"vmap_test::twice", "no batching rule", "vmap(level",
                                         "loop fallback is switched off"});
}

}  // namespace

// A mean over a sample's rows sends back an expanded (stride-0) gradient; the
// product's batching rule must fold it into a GEMM without assuming a view exists.
TEST(VmapCompose, PerSampleGradThroughAMeanPooledStackOfLinears) {
  st::Generator gen(31);
  const st::Tensor w1 = st::randn({32, 8}, gen, st::kFloat64);
  const st::Tensor w2 = st::randn({4, 32}, gen, st::kFloat64);
  const st::Tensor xs = st::randn({3, 5, 8}, gen, st::kFloat64);
  auto loss = [](const st::Tensor& a, const st::Tensor& b, const st::Tensor& x) {
    return st::nn::linear(st::nn::linear(x, a).tanh(), b).mean({0}).sum();
  };
  auto per_sample = st::vmap(st::grad<0, 1>(loss), {.in_dims = {st::none, st::none, 0}});
  const auto [g1, g2] = per_sample(w1, w2, xs);
  for (int64_t i = 0; i < 3; ++i) {
    const auto [e1, e2] = st::grad<0, 1>(loss)(w1, w2, xs.select(0, i));
    EXPECT_TRUE(st::testing::allclose(g1.select(0, i), e1));
    EXPECT_TRUE(st::testing::allclose(g2.select(0, i), e2));
  }
}

// The same with the gradient w.r.t. the input: the expanded gradient meets the
// shared weight on the other side of the product.
TEST(VmapCompose, PerSampleInputGradThroughAMeanPooledStackOfLinears) {
  st::Generator gen(32);
  const st::Tensor w1 = st::randn({32, 8}, gen, st::kFloat64);
  const st::Tensor w2 = st::randn({4, 32}, gen, st::kFloat64);
  const st::Tensor xs = st::randn({3, 5, 8}, gen, st::kFloat64);
  auto loss = [&](const st::Tensor& x) {
    return st::nn::linear(st::nn::linear(x, w1), w2).mean({0}).sum();
  };
  EXPECT_TRUE(st::testing::allclose(st::vmap(st::grad(loss))(xs), loop_over(st::grad(loss), xs)));
}

// Batches whose samples repeat a row (stride 0) meet a shared matrix on either side
// of mm, and of matmul's stack-of-matrices path.
TEST(VmapProduct, ExpandedSamplesAgainstASharedMatrix) {
  st::Generator gen(33);
  const st::Tensor rows = st::randn({3, 1, 4}, gen, st::kFloat64).expand({3, 5, 4});
  const st::Tensor w = st::randn({4, 6}, gen, st::kFloat64);
  const st::Tensor v = st::randn({6, 5}, gen, st::kFloat64);
  auto left = [&](const st::Tensor& x) { return st::mm(x, w); };
  auto right = [&](const st::Tensor& x) { return st::mm(v, x); };
  EXPECT_TRUE(st::testing::allclose(st::vmap(left)(rows), loop_over(left, rows)));
  EXPECT_TRUE(st::testing::allclose(st::vmap(right)(rows), loop_over(right, rows)));
  const st::Tensor stacks = st::randn({2, 1, 1, 4}, gen, st::kFloat64).expand({2, 3, 5, 4});
  auto stacked = [&](const st::Tensor& x) { return st::matmul(x, w); };
  EXPECT_TRUE(st::testing::allclose(st::vmap(stacked)(stacks), loop_over(stacked, stacks)));
}
