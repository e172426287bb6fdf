// cond and the higher-order operator mechanism: eager, grad, jvp, vmap (batched
// and unbatched predicates, nested), each against the same computation written
// with a C++ if on item(); gradients against finite differences in Float64.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>

#include "tests/test_support.h"

namespace st = strata;

namespace {

using st::testing::allclose;
using Pair = std::pair<st::Tensor, st::Tensor>;

Pair true_branch(const st::Tensor& x, const st::Tensor& y) { return {x.sin() * y, x + y}; }
Pair false_branch(const st::Tensor& x, const st::Tensor& y) { return {x.exp() - y, x * y}; }

// The reference: the same branches chosen by a C++ if.
Pair with_if(const st::Tensor& x, const st::Tensor& y) {
  return x.sum().item<double>() > 0 ? true_branch(x, y) : false_branch(x, y);
}
Pair with_cond(const st::Tensor& x, const st::Tensor& y) {
  return st::cond(x.sum() > 0.0, true_branch, false_branch, x, y);
}

TEST(Cond, EagerTakesTheBranchOfThePredicate) {
  const st::Tensor y = st::tensor({0.5, -1.5, 2.0}, {3});
  for (double sign : {1.0, -1.0}) {
    const st::Tensor x = st::tensor({0.3, 1.2, -0.4}, {3}) * sign;
    const auto [a, b] = with_cond(x, y);
    const auto [ra, rb] = with_if(x, y);
    EXPECT_TRUE(allclose(a, ra));
    EXPECT_TRUE(allclose(b, rb));
  }
}

TEST(Cond, OperandsAndResultsAreTrees) {
  using Params = std::map<std::string, st::Tensor>;
  const Params p{{"w", st::tensor({2.0, 3.0}, {2})}, {"b", st::tensor({1.0, -1.0}, {2})}};
  const std::vector<st::Tensor> xs{st::tensor({1.0, 2.0}, {2})};
  auto affine = [](const Params& q, const std::vector<st::Tensor>& v) {
    return Params{{"out", q.at("w") * v[0] + q.at("b")}};
  };
  auto negated = [](const Params& q, const std::vector<st::Tensor>& v) {
    return Params{{"out", -(q.at("w") * v[0])}};
  };
  const Params out = st::cond(st::tensor({1.0}, {}) > 0.0, affine, negated, p, xs);
  EXPECT_TRUE(allclose(out.at("out"), st::tensor({3.0, 5.0}, {2})));
  const Params other = st::cond(st::tensor({-1.0}, {}) > 0.0, affine, negated, p, xs);
  EXPECT_TRUE(allclose(other.at("out"), st::tensor({-2.0, -6.0}, {2})));
}

TEST(Cond, ABoolPredicateRunsOneBranch) {
  int true_calls = 0;
  int false_calls = 0;
  auto t = [&](const st::Tensor& x) { ++true_calls; return x * 2.0; };
  auto f = [&](const st::Tensor& x) { ++false_calls; return x * 3.0; };
  const st::Tensor x = st::tensor({1.0, 2.0}, {2});
  EXPECT_TRUE(allclose(st::cond(false, t, f, x), x * 3.0));
  EXPECT_EQ(true_calls, 0);
  EXPECT_EQ(false_calls, 1);
  // A concrete tensor predicate runs one branch too.
  EXPECT_TRUE(allclose(st::cond(st::tensor({1.0}, {}) > 0.0, t, f, x), x * 2.0));
  EXPECT_EQ(true_calls, 1);
  EXPECT_EQ(false_calls, 1);
}

st::testing::TensorListFunction as_list(bool pick_true_sign) {
  return [pick_true_sign](const std::vector<st::Tensor>& in) {
    const st::Tensor x = pick_true_sign ? in[0] : -in[0];
    auto [a, b] = with_cond(x, in[1]);
    return std::vector<st::Tensor>{a, b};
  };
}

TEST(Cond, GradAndJvpMatchFiniteDifferences) {
  const st::Tensor x = st::tensor({0.3, 1.2, -0.4}, {3});
  const st::Tensor y = st::tensor({0.5, -1.5, 2.0}, {3});
  for (bool sign : {true, false}) {
    EXPECT_TRUE(st::testing::gradcheck(as_list(sign), {x, y})) << sign;
    EXPECT_TRUE(st::testing::jvpcheck(as_list(sign), {x, y})) << sign;
    EXPECT_TRUE(st::testing::gradgradcheck(as_list(sign), {x, y})) << sign;
  }
}

TEST(Cond, GradEqualsTheGradOfTheIf) {
  const st::Tensor y = st::tensor({0.5, -1.5, 2.0}, {3});
  auto loss_cond = [&](const st::Tensor& x) { return with_cond(x, y).first.sum(); };
  auto loss_if = [&](const st::Tensor& x) { return with_if(x, y).first.sum(); };
  for (double sign : {1.0, -1.0}) {
    const st::Tensor x = st::tensor({0.3, 1.2, -0.4}, {3}) * sign;
    EXPECT_TRUE(allclose(st::grad(loss_cond)(x), st::grad(loss_if)(x)));
    EXPECT_TRUE(allclose(st::jacfwd(loss_cond)(x), st::jacfwd(loss_if)(x)));
  }
}

// Each sample's own branch: the loop over the batch with a C++ if.
st::Tensor loop_with_if(const st::Tensor& xs, const st::Tensor& y) {
  std::vector<st::Tensor> outs;
  for (int64_t b = 0; b < xs.sizes()[0]; ++b) outs.push_back(with_if(xs.select(0, b), y).first);
  return st::stack(outs, 0);
}

TEST(CondVmap, BatchedPredicateSelectsPerSample) {
  st::Generator gen(3);
  const st::Tensor xs = st::randn({6, 3}, gen, st::kFloat64);
  const st::Tensor y = st::tensor({0.5, -1.5, 2.0}, {3});
  auto f = [&](const st::Tensor& x) { return with_cond(x, y).first; };
  EXPECT_TRUE(allclose(st::vmap(f)(xs), loop_with_if(xs, y)));
  // Per-sample gradients: vmap(grad) against grad of each sample's if.
  auto loss = [&](const st::Tensor& x) { return f(x).sum(); };
  auto loss_if = [&](const st::Tensor& x) { return with_if(x, y).first.sum(); };
  const st::Tensor per_sample = st::vmap(st::grad(loss))(xs);
  for (int64_t b = 0; b < 6; ++b) {
    EXPECT_TRUE(allclose(per_sample.select(0, b), st::grad(loss_if)(xs.select(0, b)))) << b;
  }
}

TEST(CondVmap, UnbatchedPredicateRunsOneBranch) {
  int true_calls = 0;
  int false_calls = 0;
  auto t = [&](const st::Tensor& x) { ++true_calls; return x.sin(); };
  auto f = [&](const st::Tensor& x) { ++false_calls; return x.cos(); };
  const st::Tensor flag = st::tensor({1.0}, {});
  const st::Tensor xs = st::tensor({0.1, 0.2, 0.3, 0.4}, {4});
  auto g = [&](const st::Tensor& x) { return st::cond(flag > 0.0, t, f, x); };
  EXPECT_TRUE(allclose(st::vmap(g)(xs), xs.sin()));
  EXPECT_EQ(true_calls, 1);
  EXPECT_EQ(false_calls, 0);
}

TEST(CondVmap, GradThroughVmapMatchesFiniteDifferences) {
  st::Generator gen(4);
  const st::Tensor xs = st::randn({5, 3}, gen, st::kFloat64);
  const st::Tensor y = st::tensor({0.5, -1.5, 2.0}, {3});
  auto f = [&](const std::vector<st::Tensor>& in) {
    return std::vector<st::Tensor>{
        st::vmap([&](const st::Tensor& x) { return with_cond(x, in[1]).second; })(in[0])};
  };
  EXPECT_TRUE(st::testing::gradcheck(f, {xs, y}));
  EXPECT_TRUE(st::testing::jvpcheck(f, {xs, y}));
}

// jax#20601: sqrt in the taken branch of some lanes only. The untaken lanes'
// derivative of sqrt is NaN, and must not reach the gradient.
st::Tensor sqrt_or_square(const st::Tensor& x) {
  return st::cond(
      x > 0.0, [](const st::Tensor& v) { return v.sqrt(); },
      [](const st::Tensor& v) { return (-v).log() + v * v; }, x);
}
double sqrt_or_square_grad(double x) { return x > 0 ? 0.5 / std::sqrt(x) : 1.0 / x + 2.0 * x; }

TEST(CondVmap, UntakenBranchDoesNotPoisonGradients) {
  const std::vector<double> values{-2.0, 0.25, -0.5, 4.0, 1.0, -3.0};
  const st::Tensor xs = st::tensor(values, {6});
  std::vector<double> expected;
  for (double v : values) expected.push_back(sqrt_or_square_grad(v));
  const st::Tensor reference = st::tensor(expected, {6});
  // grad over vmap.
  auto total = [](const st::Tensor& x) { return st::vmap(sqrt_or_square)(x).sum(); };
  EXPECT_TRUE(allclose(st::grad(total)(xs), reference));
  // vmap over grad (per-sample gradients) and forward mode.
  EXPECT_TRUE(allclose(st::vmap(st::grad(sqrt_or_square))(xs), reference));
  const auto [value, tangent] = st::jvp(st::vmap(sqrt_or_square), std::tuple{xs},
                                        std::tuple{st::ones({6}, st::kFloat64)});
  EXPECT_TRUE(allclose(tangent, reference));
  EXPECT_TRUE(allclose(st::jacrev(total)(xs), reference));
}

// The same with the poisoned derivative on a captured tensor: sqrt(x * w) on
// negative lanes, w captured by the branch rather than passed as an operand.
TEST(CondVmap, CapturedTensorsAreMaskedOnUntakenLanes) {
  const std::vector<double> values{4.0, -1.0, 9.0, -4.0, 0.5};
  const st::Tensor xs = st::tensor(values, {5});
  auto per_lane = [](const st::Tensor& x, const st::Tensor& w) {
    return st::cond(x > 0.0, [&](const st::Tensor& a) { return (a * w).sqrt(); },
                    [&](const st::Tensor& a) { return a * w * w; }, x);
  };
  auto total = [&](const st::Tensor& w) {
    return st::vmap([&](const st::Tensor& x) { return per_lane(x, w); })(xs).sum();
  };
  auto total_with_if = [&](const st::Tensor& w) {
    st::Tensor sum = st::zeros({}, st::kFloat64);
    for (int64_t i = 0; i < xs.size(0); ++i) {
      const st::Tensor x = xs.select(0, i);
      sum = sum + (x.item<double>() > 0 ? (x * w).sqrt() : x * w * w);
    }
    return sum;
  };
  const st::Tensor w = st::tensor({1.5}, {});
  double expected = 0.0;
  for (double x : values) expected += x > 0 ? 0.5 * x / std::sqrt(x * 1.5) : 2.0 * x * 1.5;
  EXPECT_NEAR(st::grad(total)(w).item<double>(), expected, 1e-12);
  EXPECT_TRUE(allclose(st::grad(total)(w), st::grad(total_with_if)(w)));
  // Under functionalize, whose level shows its calls to no dispatch mode.
  auto functionalized = [&](const st::Tensor& w1) {
    return st::vmap(st::functionalize([&](const st::Tensor& x) { return per_lane(x, w1); }))(xs).sum();
  };
  EXPECT_NEAR(st::grad(functionalized)(w).item<double>(), expected, 1e-12);
  const auto [value, tangent] = st::jvp(total, std::tuple{w}, std::tuple{st::ones({}, st::kFloat64)});
  EXPECT_TRUE(allclose(value, total_with_if(w)));
  EXPECT_NEAR(tangent.item<double>(), expected, 1e-12);
  // Per-sample gradients with respect to the captured tensor.
  const st::Tensor ws = st::full({5}, 2.0, st::kFloat64);
  const st::Tensor per_sample =
      st::vmap(st::grad([](const st::Tensor& w1, const st::Tensor& x) {
        return st::cond(x > 0.0, [&](const st::Tensor& a) { return (a * w1).sqrt(); },
                        [&](const st::Tensor& a) { return a * w1 * w1; }, x);
      }))(ws, xs);
  for (int64_t i = 0; i < 5; ++i) {
    const double x = values[static_cast<size_t>(i)];
    EXPECT_NEAR(per_sample.select(0, i).item<double>(), x > 0 ? 0.5 * x / std::sqrt(2.0 * x) : 4.0 * x, 1e-12) << i;
  }
}

TEST(CondVmap, NestedBatchingAtEitherOrBothLevels) {
  st::Generator gen(5);
  const st::Tensor outer = st::randn({3, 2}, gen, st::kFloat64);  // predicate source
  const st::Tensor inner = st::randn({4, 2}, gen, st::kFloat64);
  auto pick = [](const st::Tensor& p, const st::Tensor& x) {
    return st::cond(
        p.sum() > 0.0, [](const st::Tensor& a, const st::Tensor& b) { return a * b + b.sin(); },
        [](const st::Tensor& a, const st::Tensor& b) { return a - b.exp(); }, p, x);
  };
  auto reference = [&](const st::Tensor& p, const st::Tensor& x) {
    return p.sum().item<double>() > 0 ? p * x + x.sin() : p - x.exp();
  };
  // Predicate batched at the outer level, operand at the inner level only.
  const st::Tensor a = st::vmap([&](const st::Tensor& p) {
    return st::vmap([&](const st::Tensor& x) { return pick(p, x); })(inner);
  })(outer);
  // Predicate batched at the inner level, operand at the outer level.
  const st::Tensor b = st::vmap([&](const st::Tensor& x) {
    return st::vmap([&](const st::Tensor& p) { return pick(p, x); })(outer);
  })(inner);
  // Both batched at both levels (sizes 3 and 3).
  const st::Tensor same = st::randn({3, 3, 2}, gen, st::kFloat64);
  const st::Tensor other = st::randn({3, 3, 2}, gen, st::kFloat64);
  const st::Tensor c = st::vmap(st::vmap(pick))(same, other);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      const st::Tensor expected = reference(outer.select(0, i), inner.select(0, j));
      EXPECT_TRUE(allclose(a.select(0, i).select(0, j), expected));
      EXPECT_TRUE(allclose(b.select(0, j).select(0, i), expected));
    }
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_TRUE(allclose(c.select(0, i).select(0, j),
                           reference(same.select(0, i).select(0, j),
                                     other.select(0, i).select(0, j))));
    }
  }
}

}  // namespace
