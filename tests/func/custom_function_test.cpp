// Custom functions under every transform: the user's rules are the ones used,
// left-out rules are derived, and bad rules give errors naming the function.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;
using testing::error_message;
using testing::expect_contains;
using List = std::vector<Tensor>;

Tensor diag(const Tensor& v) { return eye(v.numel(), v.numel(), v.dtype()) * v; }

// x³ with only a vjp rule (3x²·ct).
CustomFunction cube_vjp_only() {
  return custom_function([](const List& in) { return List{in[0] * in[0] * in[0]}; },
                         {.vjp = [](const List& in, const List&, const List& ct) {
                            return List{ct[0] * in[0] * in[0] * 3.0};
                          },
                          .name = "cube"});
}

// sin whose vjp rule doubles the true gradient: visible wherever the rule is used.
CustomFunction doubled_sin() {
  return custom_function([](const List& in) { return List{in[0].sin()}; },
                         {.vjp = [](const List& in, const List&, const List& ct) {
                            return List{ct[0] * in[0].cos() * 2.0};
                          },
                          .name = "doubled_sin"});
}

const Tensor kX = tensor({0.5, -1.25, 2.0});

TEST(CustomFunction, EagerCallRunsTheForward) {
  EXPECT_TRUE(allclose(cube_vjp_only()({kX})[0], kX * kX * kX));
}

TEST(CustomFunction, GradUsesTheVjpRule) {
  const CustomFunction f = doubled_sin();
  auto loss = [&](const Tensor& x) { return f({x})[0].sum(); };
  EXPECT_TRUE(allclose(grad(loss)(kX), kX.cos() * 2.0));
  auto [out, vjp_fn] = vjp([&](const Tensor& x) { return f({x})[0]; }, kX);
  EXPECT_TRUE(allclose(out, kX.sin()));
  EXPECT_TRUE(allclose(std::get<0>(vjp_fn(ones({3}, kFloat64))), kX.cos() * 2.0));
}

TEST(CustomFunction, VmapOfGradAndGradOfVmapUseTheVjpRule) {
  const CustomFunction f = doubled_sin();
  const Tensor xs = tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});
  auto loss = [&](const Tensor& x) { return f({x})[0].sum(); };
  EXPECT_TRUE(allclose(vmap(grad(loss))(xs), xs.cos() * 2.0));
  auto batched_loss = [&](const Tensor& x) { return vmap([&](const Tensor& s) { return f({s})[0]; })(x).sum(); };
  EXPECT_TRUE(allclose(grad(batched_loss)(xs), xs.cos() * 2.0));
}

TEST(CustomFunction, JacfwdAndHessianOfVjpOnlyFunction) {
  const CustomFunction f = cube_vjp_only();
  auto g = [&](const Tensor& x) { return f({x})[0]; };
  EXPECT_TRUE(allclose(jacfwd(g)(kX), diag(kX * kX * 3.0)));
  EXPECT_TRUE(allclose(jacrev(g)(kX), diag(kX * kX * 3.0)));
  auto total = [&](const Tensor& x) { return f({x})[0].sum(); };
  EXPECT_TRUE(allclose(hessian(total)(kX), diag(kX * 6.0)));
  // Second order through the vjp rule's own ops.
  auto dtotal = [&](const Tensor& x) { return grad(total)(x).sum(); };
  EXPECT_TRUE(allclose(grad(dtotal)(kX), kX * 6.0));
  auto [y, ty] = jvp(g, std::tuple{kX}, std::tuple{ones({3}, kFloat64)});
  EXPECT_TRUE(allclose(ty, kX * kX * 3.0));
}

TEST(CustomFunction, JvpRuleIsUsedWhenGiven) {
  // A jvp rule that triples the true tangent.
  const CustomFunction f = custom_function(
      [](const List& in) { return List{in[0].exp()}; },
      {.jvp = [](const List& in, const List& t) { return List{t[0] * in[0].exp() * 3.0}; }});
  auto g = [&](const Tensor& x) { return f({x})[0]; };
  EXPECT_TRUE(allclose(jacfwd(g)(kX), diag(kX.exp() * 3.0)));
  // No vjp rule: grad differentiates the forward's own ops.
  EXPECT_TRUE(allclose(grad([&](const Tensor& x) { return g(x).sum(); })(kX), kX.exp()));
}

TEST(CustomFunction, CustomVmapRuleIsCalledAndTheLoopFallbackIsNot) {
  int calls = 0;
  const CustomFunction f = custom_function(
      [](const List& in) { return List{in[0] * in[1]}; },
      {.vmap = [&calls](const List& in, const BatchDims& dims) {
        ++calls;
        EXPECT_EQ(dims[0], std::optional<int64_t>(1));
        EXPECT_EQ(dims[1], std::nullopt);
        // Batch along dim 1 of x; y broadcasts against each column.
        return std::pair{List{in[0] * in[1].unsqueeze(1)}, BatchDims{int64_t{1}}};
      }});
  const Tensor xs = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {3, 2});  // 2 samples of 3 along dim 1
  const Tensor y = tensor({10.0, 20.0, 30.0});
  batching::set_loop_fallback_enabled(false);
  const Tensor out = vmap([&](const Tensor& x, const Tensor& w) { return f({x, w})[0]; },
                          {.in_dims = {1, none}})(xs, y);
  batching::set_loop_fallback_enabled(true);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(allclose(out, (xs * y.unsqueeze(1)).t()));
}

// x·y + sin(x) with a vjp for both inputs and no vmap rule.
CustomFunction mul_sin() {
  return custom_function(
      [](const List& in) { return List{in[0] * in[1] + in[0].sin(), in[1].sum()}; },
      {.vjp = [](const List& in, const List&, const List& ct) {
         return List{ct[0] * (in[1] + in[0].cos()), ct[0] * in[0] + ct[1]};
       },
       .name = "mul_sin"});
}

TEST(CustomFunction, WithoutVmapRuleResultsEqualALoop) {
  const CustomFunction f = mul_sin();
  Generator gen(3);
  const Tensor xs = randn({4, 3}, gen, kFloat64);
  const Tensor y = randn({3}, gen, kFloat64);
  auto per_sample = [&](const Tensor& x, const Tensor& w) {
    List r = f({x, w});
    return std::pair{r[0], r[1]};
  };
  batching::set_loop_fallback_enabled(false);
  const auto [a, b] = vmap(per_sample, {.in_dims = {0, none}})(xs, y);
  auto loss = [&](const Tensor& x, const Tensor& w) {
    List r = f({x, w});
    return (r[0] * r[0]).sum() + r[1];
  };
  const auto [gx, gy] = vmap(grad<0, 1>(loss), {.in_dims = {0, none}})(xs, y);
  // grad of a vmapped function: the gradient of the unbatched y sums over the batch.
  auto summed = [&](const Tensor& x, const Tensor& w) {
    return vmap(loss, {.in_dims = {0, none}})(x, w).sum();
  };
  const auto [sx, sy] = grad<0, 1>(summed)(xs, y);
  batching::set_loop_fallback_enabled(true);
  Tensor sum_gy = zeros({3}, kFloat64);
  for (int64_t i = 0; i < 4; ++i) {
    const Tensor x = xs.select(0, i);
    List r = f({x, y});
    EXPECT_TRUE(allclose(a.select(0, i), r[0]));
    EXPECT_TRUE(allclose(b.select(0, i), r[1]));
    // d/dx Σ (xy + sin x)² = 2(xy + sin x)(y + cos x); d/dy = 2(xy + sin x)x + 1.
    const Tensor r0 = x * y + x.sin();
    EXPECT_TRUE(allclose(gx.select(0, i), r0 * (y + x.cos()) * 2.0));
    EXPECT_TRUE(allclose(gy.select(0, i), r0 * x * 2.0 + 1.0));
    EXPECT_TRUE(allclose(sx.select(0, i), r0 * (y + x.cos()) * 2.0));
    sum_gy = sum_gy + r0 * x * 2.0 + 1.0;
  }
  EXPECT_TRUE(allclose(sy, sum_gy));
}

TEST(CustomFunction, JacfwdUnderVmapWithoutAnyVmapRule) {
  const CustomFunction f = cube_vjp_only();
  const Tensor xs = tensor({0.5, 1.0, 1.5, 2.0}, {2, 2});
  auto g = [&](const Tensor& x) { return f({x})[0]; };
  const Tensor js = vmap(jacfwd(g))(xs);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(allclose(js.select(0, i), diag(xs.select(0, i) * xs.select(0, i) * 3.0)));
  }
}

// trace records what runs below every transform: the forward's ops and the vjp
// rule's (not one node for the custom function); the replay gives the rule's gradient.
TEST(CustomFunction, TraceRecordsTheRulesOps) {
  const CustomFunction f = doubled_sin();
  auto g = grad([&](const Tensor& x) { return f({x})[0].sum(); });
  const Graph graph = trace(g)(kX);
  const Tensor other = tensor({0.3, 0.1, -0.7});
  EXPECT_TRUE(allclose(graph(other)[0], other.cos() * 2.0));
  const std::vector<std::string> ops = graph.op_names();
  EXPECT_NE(std::find(ops.begin(), ops.end(), "strata::cos"), ops.end());
}

using CustomFunctionErrors = testing::TransformStateRestored;

CustomFunction with_vjp(CustomVjp vjp) {
  return custom_function([](const List& in) { return List{in[0] * in[1]}; },
                         {.vjp = std::move(vjp), .name = "my_fn"});
}

TEST_F(CustomFunctionErrors, VjpReturnsTheWrongNumberShapeOrDtype) {
  const Tensor x = tensor({1.0, 2.0});
  const Tensor y = tensor({3.0, 4.0});
  auto run = [&](const CustomFunction& f) {
    return grad<0, 1>([&](const Tensor& a, const Tensor& b) { return f({a, b})[0].sum(); })(x, y);
  };
  expect_contains(error_message([&] {
                    run(with_vjp([](const List&, const List&, const List& ct) { return List{ct[0]}; }));
                  }),
                  {"my_fn", "1 gradients for 2 inputs"});
  expect_contains(error_message([&] {
                    run(with_vjp([](const List&, const List&, const List& ct) {
                      return List{ct[0], ct[0].sum()};
                    }));
                  }),
                  {"my_fn", "shape []", "input 1", "[2]"});
  expect_contains(error_message([&] {
                    run(with_vjp([](const List&, const List&, const List& ct) {
                      return List{ct[0], ct[0].to(kFloat32)};
                    }));
                  }),
                  {"my_fn", "Float32", "input 1", "Float64"});
}

TEST_F(CustomFunctionErrors, InputWrittenBeforeTheBackwardPass) {
  const CustomFunction f = cube_vjp_only();
  const Tensor x = tensor({1.0, 2.0});
  expect_contains(error_message([&] {
                    auto [out, vjp_fn] = vjp(
                        [&](const Tensor& v) {
                          const Tensor c = v * 1.0;
                          const Tensor y = f({c})[0];
                          c.mul_(full({}, 2.0, kFloat64));
                          return y;
                        },
                        x);
                    vjp_fn(ones({2}, kFloat64));
                  }),
                  {"cube", "input 0", "modified by an in-place op"});
}

}  // namespace
}  // namespace strata
