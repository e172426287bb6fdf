// jacrev, jacfwd and hessian on composed functions: against closed forms and each
// other, argnums, trees, has_aux, chunk_size, nesting with vmap and each other,
// and bad input.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;
using testing::error_message;
using testing::expect_contains;

Tensor diag(const Tensor& v) { return eye(v.numel(), v.numel(), v.dtype()) * v; }

// y = tanh(W2 tanh(W1 x + b1) + b2), 64 -> 64 -> 64 (the nested-transform benchmark's).
struct TanhMlp {
  Generator gen{7};
  Tensor w1 = randn({64, 64}, gen, kFloat64) * 0.125;
  Tensor b1 = randn({64}, gen, kFloat64) * 0.1;
  Tensor w2 = randn({64, 64}, gen, kFloat64) * 0.125;
  Tensor b2 = randn({64}, gen, kFloat64) * 0.1;
  Tensor operator()(const Tensor& x) const {
    return (w2.matmul((w1.matmul(x) + b1).tanh()) + b2).tanh();
  }
  // diag(1 - y²) W2 diag(1 - h²) W1
  Tensor jacobian(const Tensor& x) const {
    const Tensor h = (w1.matmul(x) + b1).tanh();
    const Tensor y = (*this)(x);
    return diag(1.0 - y * y).matmul(w2).matmul(diag(1.0 - h * h)).matmul(w1);
  }
};

TEST(Jacobian, TanhMlpAgainstClosedForm) {
  const TanhMlp f;
  const Tensor x = randn({64}, Generator(3), kFloat64);
  const Tensor expected = f.jacobian(x);
  EXPECT_TRUE(allclose(jacrev(f)(x), expected));
  EXPECT_TRUE(allclose(jacfwd(f)(x), expected));
}

// sin(x) x², elementwise on a [2, 3] input: J has shape [2, 3, 2, 3] and is diagonal.
TEST(Jacobian, ElementwiseLayoutIsOutputShapeThenInputShape) {
  const Tensor x = tensor({-1.5, -0.2, 0.0, 0.4, 1.0, 2.0}, {2, 3});
  auto f = [](const Tensor& a) { return a.sin() * a * a; };
  const Tensor d = x.cos() * x * x + x.sin() * x * 2.0;
  const Tensor expected = diag(d.reshape({6})).reshape({2, 3, 2, 3});
  EXPECT_TRUE(allclose(jacrev(f)(x), expected));
  EXPECT_TRUE(allclose(jacfwd(f)(x), expected));
}

TEST(Jacobian, ScalarInputAndOutputs) {
  const Tensor x = tensor({0.7}, {});
  auto f = [](const Tensor& a) { return (a * a).reshape({1, 1}); };  // [] -> [1, 1]
  EXPECT_TRUE(allclose(jacrev(f)(x), tensor({1.4}, {1, 1})));
  EXPECT_TRUE(allclose(jacfwd(f)(x), tensor({1.4}, {1, 1})));
  auto g = [](const Tensor& a) { return a.sin().sum(); };  // [3] -> []
  const Tensor v = tensor({0.1, 0.2, 0.3});
  EXPECT_TRUE(allclose(jacrev(g)(v), v.cos()));
  EXPECT_TRUE(allclose(jacfwd(g)(v), v.cos()));
}

TEST(Jacobian, EmptyInputsAndOutputs) {
  const Tensor e = zeros({0, 3}, kFloat64);
  const Tensor x = tensor({0.5, 1.5});
  auto f = [](const Tensor& a, const Tensor& b) { return std::tuple{a.t() * 2.0, b.sin()}; };
  // [output][argnum]: outputs [3, 0] and [2], inputs [0, 3] and [2].
  for (const auto& [j0, j1] : {jacrev<0, 1>(f)(e, x), jacfwd<0, 1>(f)(e, x)}) {
    EXPECT_EQ(shape_string(std::get<0>(j0).sizes()), "[3, 0, 0, 3]");
    EXPECT_EQ(shape_string(std::get<1>(j0).sizes()), "[3, 0, 2]");
    EXPECT_EQ(shape_string(std::get<0>(j1).sizes()), "[2, 0, 3]");
    EXPECT_TRUE(allclose(std::get<1>(j1), diag(x.cos())));
  }
}

TEST(Jacobian, OutputThatDoesNotDependOnTheInputHasZeroJacobian) {
  const Tensor x = tensor({1.0, 2.0});
  const Tensor c = tensor({3.0, 4.0, 5.0});
  auto f = [&](const Tensor&) { return c * 2.0; };
  EXPECT_TRUE(allclose(jacrev(f)(x), zeros({3, 2}, kFloat64)));
  EXPECT_TRUE(allclose(jacfwd(f)(x), zeros({3, 2}, kFloat64)));
}

TEST(Hessian, QuadraticFormIsAPlusATransposed) {
  const Tensor a = randn({5, 5}, Generator(11), kFloat64);
  const Tensor x = randn({5}, Generator(12), kFloat64);
  auto f = [&](const Tensor& v) { return v.dot(a.matmul(v)); };
  const Tensor h = hessian(f)(x);
  EXPECT_TRUE(allclose(h, a + a.t()));
  EXPECT_TRUE(allclose(h, h.t()));
}

TEST(Hessian, SinTimesSquarePlusLog1pAgainstClosedForm) {
  const Tensor x = randn({32}, Generator(5), kFloat64);
  auto f = [](const Tensor& v) { return (v.sin() * v * v).sum() + (v * v).sum().log1p(); };
  // diag(2 sin x + 4 x cos x - x² sin x) + 2 I / (1 + s) - 4 x xᵀ / (1 + s)², s = Σ x²
  const double s = (x * x).sum().item<double>();
  const Tensor expected = diag(x.sin() * 2.0 + x * x.cos() * 4.0 - x * x * x.sin()) +
                          eye(32, 32, kFloat64) * (2.0 / (1.0 + s)) -
                          x.outer(x) * (4.0 / ((1.0 + s) * (1.0 + s)));
  EXPECT_TRUE(allclose(hessian(f)(x), expected, 1e-9, 1e-9));
  EXPECT_TRUE(allclose(jacrev(jacrev(f))(x), expected, 1e-9, 1e-9));
}

TEST(Jacobian, SeveralArgnumsGiveATuple) {
  const Tensor a = tensor({0.5, -1.0, 2.0});
  const Tensor b = tensor({0.3, 0.1, -0.7});
  auto f = [](const Tensor& p, const Tensor& q) { return p * q.sin(); };
  auto [ja, jb] = jacrev<0, 1>(f)(a, b);
  EXPECT_TRUE(allclose(ja, diag(b.sin())));
  EXPECT_TRUE(allclose(jb, diag(a * b.cos())));
  auto [fa, fb] = jacfwd<0, 1>(f)(a, b);
  EXPECT_TRUE(allclose(fa, ja));
  EXPECT_TRUE(allclose(fb, jb));
  EXPECT_TRUE(allclose(jacrev<1>(f)(a, b), jb));
  EXPECT_TRUE(allclose(jacfwd<1>(f)(a, b), jb));
  // hessian<0, 1>: a tuple of tuples, [i][j] = d²f / d(arg i) d(arg j).
  auto g = [](const Tensor& p, const Tensor& q) { return (p * p * q).sum(); };
  auto h = hessian<0, 1>(g)(a, b);
  static_assert(std::is_same_v<decltype(h),
                               std::tuple<std::tuple<Tensor, Tensor>, std::tuple<Tensor, Tensor>>>);
  EXPECT_TRUE(allclose(std::get<0>(std::get<0>(h)), diag(b * 2.0)));
  EXPECT_TRUE(allclose(std::get<1>(std::get<0>(h)), diag(a * 2.0)));
  EXPECT_TRUE(allclose(std::get<0>(std::get<1>(h)), diag(a * 2.0)));
  EXPECT_TRUE(allclose(std::get<1>(std::get<1>(h)), zeros({3, 3}, kFloat64)));
}

using Params = std::map<std::string, Tensor>;

// y = w x + b and its sum: the Jacobian is a vector (the outputs) of maps (the parameters).
TEST(Jacobian, TreeOutputOfTreeInput) {
  const Params p{{"b", tensor({0.1, -0.2})}, {"w", tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3})}};
  const Tensor x = tensor({0.5, -1.0, 2.0});
  auto f = [](const Params& q, const Tensor& v) {
    const Tensor y = q.at("w").matmul(v) + q.at("b");
    return std::vector<Tensor>{y, y.sum()};
  };
  const auto jr = jacrev(f)(p, x);
  static_assert(std::is_same_v<std::decay_t<decltype(jr)>, std::vector<Params>>);
  ASSERT_EQ(jr.size(), 2u);
  // dy_i / dw_jk = δ_ij x_k, dy_i / db_j = δ_ij; the sum's: x_k and 1.
  const Tensor dy_dw = eye(2, 2, kFloat64).reshape({2, 2, 1}) * x;
  EXPECT_TRUE(allclose(jr[0].at("w"), dy_dw));
  EXPECT_TRUE(allclose(jr[0].at("b"), eye(2, 2, kFloat64)));
  EXPECT_TRUE(allclose(jr[1].at("w"), x.expand({2, 3})));
  EXPECT_TRUE(allclose(jr[1].at("b"), ones({2}, kFloat64)));
  const auto jf = jacfwd(f)(p, x);
  for (size_t o = 0; o < 2; ++o) {
    for (const auto& [name, block] : jr[o]) EXPECT_TRUE(allclose(jf[o].at(name), block)) << name;
  }
  // The Jacobian of a tuple output with a constant leaf w.r.t. a vector input.
  auto g = [](const std::vector<Tensor>& v) { return std::tuple{v[0] * v[1], 2.5}; };
  const std::vector<Tensor> v{tensor({1.0, 2.0}), tensor({3.0, 4.0})};
  const auto jg = jacrev(g)(v);
  static_assert(
      std::is_same_v<std::decay_t<decltype(jg)>, std::tuple<std::vector<Tensor>, double>>);
  EXPECT_TRUE(allclose(std::get<0>(jg)[0], diag(v[1])));
  EXPECT_TRUE(allclose(std::get<0>(jg)[1], diag(v[0])));
  EXPECT_EQ(std::get<1>(jg), 2.5);
  EXPECT_TRUE(allclose(std::get<0>(jacfwd(g)(v))[1], diag(v[0])));
}

TEST(Hessian, OfATreeInputIsATreeOfTrees) {
  const Params p{{"a", tensor({0.5, -1.0})}, {"b", tensor({2.0, 0.3})}};
  auto f = [](const Params& q) { return (q.at("a") * q.at("a") * q.at("b")).sum(); };
  const auto h = hessian(f)(p);
  static_assert(std::is_same_v<std::decay_t<decltype(h)>, std::map<std::string, Params>>);
  EXPECT_TRUE(allclose(h.at("a").at("a"), diag(p.at("b") * 2.0)));
  EXPECT_TRUE(allclose(h.at("a").at("b"), diag(p.at("a") * 2.0)));
  EXPECT_TRUE(allclose(h.at("b").at("a"), diag(p.at("a") * 2.0)));
  EXPECT_TRUE(allclose(h.at("b").at("b"), zeros({2, 2}, kFloat64)));
}

TEST(Jacobian, ChunkSizesAgree) {
  const TanhMlp mlp;
  auto f = [&](const Tensor& x) { return std::vector<Tensor>{mlp(x), mlp(x).sum()}; };
  const Tensor x = randn({64}, Generator(4), kFloat64);
  const std::vector<Tensor> whole = jacrev(f)(x);
  for (int64_t chunk : {1, 3, 64, 100}) {
    const std::vector<Tensor> rev = jacrev(f, {.chunk_size = chunk})(x);
    const std::vector<Tensor> fwd = jacfwd(f, {.chunk_size = chunk})(x);
    for (size_t o = 0; o < 2; ++o) {
      EXPECT_TRUE(allclose(rev[o], whole[o])) << "jacrev chunk_size " << chunk;
      EXPECT_TRUE(allclose(fwd[o], whole[o])) << "jacfwd chunk_size " << chunk;
    }
  }
}

// Random ops under jacfwd draw per input direction as vmap does; a chunked call
// replays vmap's streams, so the chunk size does not change the result.
TEST(Jacobian, JacfwdRandomnessDoesNotDependOnTheChunkSize) {
  auto jacobian = [](int64_t chunk, Randomness randomness) {
    Generator gen(21);
    auto f = [&](const Tensor& v) { return v * randn({4}, gen, kFloat64); };
    return jacfwd(f, {.chunk_size = chunk, .randomness = randomness})(ones({4}, kFloat64));
  };
  const Tensor same = jacobian(0, Randomness::Same);
  EXPECT_TRUE(allclose(same, diag(same.diagonal())));
  const Tensor different = jacobian(0, Randomness::Different);
  EXPECT_TRUE(allclose(different, diag(different.diagonal())));
  EXPECT_TRUE(allclose(jacobian(3, Randomness::Different), different));
}

TEST(Jacobian, HasAux) {
  const Tensor x = tensor({0.2, 0.4});
  auto f = [](const Tensor& v) {
    const Tensor y = v.exp();
    return std::pair{y * v, Params{{"y", y}}};
  };
  const Tensor expected = diag(x.exp() * (x + 1.0));
  for (int64_t chunk : {0, 1}) {
    auto [jr, aux_r] = jacrev(f, has_aux, {.chunk_size = chunk})(x);
    EXPECT_TRUE(allclose(jr, expected));
    EXPECT_TRUE(allclose(aux_r.at("y"), x.exp()));
    auto [jf, aux_f] = jacfwd(f, has_aux, {.chunk_size = chunk})(x);
    EXPECT_TRUE(allclose(jf, expected));
    EXPECT_TRUE(allclose(aux_f.at("y"), x.exp()));
  }
}

TEST(Jacobian, VmapOfJacrevAndHessianAgainstLoops) {
  const TanhMlp mlp;
  const Tensor xs = randn({4, 64}, Generator(9), kFloat64);
  const Tensor batched = vmap(jacrev(mlp))(xs);
  ASSERT_EQ(batched.sizes(), IntArrayRef({4, 64, 64}));
  EXPECT_TRUE(allclose(vmap(jacrev(mlp, {.chunk_size = 5}))(xs), batched));
  for (int64_t b = 0; b < 4; ++b)
    EXPECT_TRUE(allclose(batched.select(0, b), mlp.jacobian(xs.select(0, b))));
  auto f = [](const Tensor& v) { return (v.sin() * v * v).sum() + (v * v).sum().log1p(); };
  const Tensor vs = randn({3, 8}, Generator(10), kFloat64);
  const Tensor hs = vmap(hessian(f))(vs);
  ASSERT_EQ(hs.sizes(), IntArrayRef({3, 8, 8}));
  for (int64_t b = 0; b < 3; ++b)
    EXPECT_TRUE(allclose(hs.select(0, b), hessian(f)(vs.select(0, b))));
}

// jacfwd reuses its identity basis across calls (Note [Reusing the identity
// basis]); a basis that was written, or is still held, must not come back.
TEST(Jacobian, ReusedBasisIsNeverOneThatWasWrittenOrIsHeld) {
  const Tensor x = tensor({0.5, -1.0, 2.0});
  auto identity_map = [](const Tensor& v) { return v; };
  Tensor kept = jacfwd(identity_map)(x);
  ASSERT_TRUE(allclose(kept, eye(3, 3, kFloat64)));
  kept.mul_(full({}, 5.0, kFloat64));
  EXPECT_TRUE(allclose(jacfwd(identity_map)(x), eye(3, 3, kFloat64)));
  EXPECT_TRUE(allclose(kept, eye(3, 3, kFloat64) * 5.0));
  // The Jacobian of the identity map may be the basis itself: written, then dropped.
  jacfwd(identity_map)(x).mul_(full({}, 5.0, kFloat64));
  EXPECT_TRUE(allclose(jacfwd(identity_map)(x), eye(3, 3, kFloat64)));
  // A dispatch mode sees the basis made on every call.
  std::map<std::string, int> counts;
  {
    DispatchModeGuard mode(std::make_shared<testing::CountingMode>(counts));
    for (int call = 0; call < 2; ++call) jacfwd(identity_map)(x);
  }
  EXPECT_EQ(counts["strata::eye"], 2);
  // In-place writes inside the function replace tangents; the basis stays the identity.
  auto doubled_in_place = [](const Tensor& v) { return v.mul_(full({}, 2.0, kFloat64)); };
  for (int call = 0; call < 3; ++call) {
    EXPECT_TRUE(allclose(jacfwd(doubled_in_place)(x.clone()), eye(3, 3, kFloat64) * 2.0))
        << "call " << call;
  }
}

// What jacfwd is for: a Jacobian inside an outer transform's function.
TEST(Jacobian, GradOfJacobianDeterminantLikeSum) {
  const Tensor x = tensor({0.3, -0.6, 0.9});
  auto f = [](const Tensor& v) { return v.sin() * v; };
  // Σ_ij J_ij = Σ_i (cos x_i x_i + sin x_i); its gradient: -sin x x + 2 cos x.
  auto total = [&](const Tensor& v) { return jacfwd(f)(v).sum(); };
  EXPECT_TRUE(allclose(grad(total)(x), x.cos() * 2.0 - x.sin() * x));
  auto total_rev = [&](const Tensor& v) { return jacrev(f)(v).sum(); };
  EXPECT_TRUE(allclose(grad(total_rev)(x), x.cos() * 2.0 - x.sin() * x));
}

using JacobianErrors = testing::TransformStateRestored;

TEST_F(JacobianErrors, JacfwdOfIntegerOutputs) {
  const Tensor x = tensor({1.0, 2.0});
  auto f = [](const Tensor& v) { return v.argmax(); };
  expect_contains(error_message([&] { jacfwd(f)(x); }),
                  {"[jacfwd]", "output 0", "Int64", "only floating-point outputs", "level"});
  expect_contains(error_message([&] { jacrev(f)(x); }),
                  {"[jacrev]", "output 0", "Int64", "only floating-point outputs"});
}

TEST_F(JacobianErrors, NonFloatingInputToDifferentiate) {
  const Tensor i = tensor(std::vector<int64_t>{1, 2, 3});
  auto f = [](const Tensor& v) { return v * 2; };
  expect_contains(error_message([&] { jacrev(f)(i); }),
                  {"[jacrev]", "argument 0", "Int64", "floating-point"});
  expect_contains(error_message([&] { jacfwd(f)(i); }),
                  {"[jacfwd]", "argument 0", "Int64", "floating-point"});
  // An integer argument that is not differentiated is a constant.
  auto g = [](const Tensor& v, const Tensor& k) { return v * k; };
  EXPECT_TRUE(allclose(jacfwd(g)(tensor({1.0, 1.0, 1.0}), i), diag(i.to(kFloat64))));
}

TEST_F(JacobianErrors, RandomOpUnderJacfwdWithRandomnessError) {
  Generator gen(22);
  auto f = [&](const Tensor& v) { return v * randn({3}, gen, kFloat64); };
  expect_contains(error_message([&] { jacfwd(f)(ones({3}, kFloat64)); }),
                  {"strata::randn", "randomness = Error"});
}

TEST_F(JacobianErrors, NegativeChunkSize) {
  auto f = [](const Tensor& v) { return v.sin(); };
  expect_contains(error_message([&] {
                    jacrev(f, {.chunk_size = -2})(tensor({1.0, 2.0}));
                  }),
                  {"[jacrev]", "chunk_size", "-2"});
}

TEST_F(JacobianErrors, ErrorInsideTheFunctionUnwindsEveryLayer) {
  auto f = [](const Tensor& v) { return v.matmul(ones({5, 5}, kFloat64)); };
  for (int64_t chunk : {0, 1}) {
    expect_contains(error_message([&] { jacfwd(f, {.chunk_size = chunk})(ones({3}, kFloat64)); }),
                    {"matmul"});
  }
  expect_contains(error_message([&] { hessian(f)(ones({3}, kFloat64)); }), {"matmul"});
}


TEST_F(JacobianErrors, FunctionWithNoOutputs) {
  auto none = [](const Tensor&) { return std::vector<Tensor>{}; };
  for (const char* transform : {"jacrev", "jacfwd"}) {
    const std::string message = error_message([&] {
      if (std::string(transform) == "jacrev") {
        jacrev(none)(ones({3}, kFloat64));
      } else {
        jacfwd(none)(ones({3}, kFloat64));
      }
    });
    expect_contains(message, {transform, "no tensors"});
  }
}

}  // namespace
}  // namespace strata
