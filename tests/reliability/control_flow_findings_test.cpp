// Control flow at the edges the differential fuzzer reached (tests/fuzz/README.md):
// an operand written through a view under functionalize, and scan and map over
// a length-0 dim. Expected values are worked out by hand.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <tuple>
#include <utility>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;

class ControlFlowFindings : public testing::TransformStateRestored {};

// t = x with its elements scaled by `scale`, written through a view of a clone:
// under functionalize t is then stale until something reads it.
Tensor scaled_through_a_view(const Tensor& x, const Tensor& scale) {
  Tensor t = x.clone();
  t.reshape({-1}).mul_(scale);
  return t;
}

Tensor times_ten(const Tensor& u) { return u * 10.0; }
Tensor minus_one(const Tensor& u) { return u - 1.0; }

// The predicate reads x, never t, so cond's per-lane masking is the first read
// of t after the write: it must see the written value.
TEST_F(ControlFlowFindings, CondOnAnOperandWrittenThroughAViewUnderFunctionalize) {
  auto f = [](const Tensor& x) {
    const Tensor t = scaled_through_a_view(x, tensor({2.0, 3.0}, {2}));
    return cond(x.sum() > 0.0, &times_ten, &minus_one, t);
  };
  const Tensor xs = tensor({1.0, 2.0, -1.0, -3.0}, {2, 2});
  // Rows: t = [2, 6] (sum of x > 0: t * 10) and t = [-2, -9] (t - 1).
  const Tensor expected = tensor({20.0, 60.0, -3.0, -10.0}, {2, 2});
  EXPECT_TRUE(allclose(vmap(functionalize(f))(xs), expected));
  EXPECT_TRUE(allclose(vmap(functionalize(f, Remove::MutationsAndViews))(xs), expected));
  EXPECT_TRUE(allclose(vmap(f)(xs), expected));
}

// Functionalize below vmap: the operand's functional level is not the top layer
// when cond masks it, so its value is regenerated with the layers above it off.
TEST_F(ControlFlowFindings, CondUnderVmapInsideFunctionalizeSeesTheViewWrite) {
  auto f = [](const Tensor& x, const Tensor& s) {
    const Tensor t = scaled_through_a_view(x, full({4}, 2.0, kFloat64));
    return vmap([](const Tensor& u, const Tensor& v) { return cond(v.sum() > 0.0, &times_ten, &minus_one, u); })(t, s);
  };
  const Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  const Tensor s = tensor({1.0, -1.0}, {2, 1});
  // t = [[2, 4], [6, 8]]; row 0 takes t * 10, row 1 t - 1.
  EXPECT_TRUE(allclose(functionalize(f)(x, s), tensor({20.0, 40.0, 5.0, 7.0}, {2, 2})));
}

// With a grad level between: the masked operand is the written one, and the
// gradient is the taken branch's.
TEST_F(ControlFlowFindings, GradOfCondOnAViewWrittenOperandPerLane) {
  auto loss = [](const Tensor& x) {
    const Tensor t = scaled_through_a_view(x, full({2}, 2.0, kFloat64));
    return cond(
               x.sum() > 0.0, [](const Tensor& u) { return u * u; },
               [](const Tensor& u) { return u * 3.0; }, t)
        .sum();
  };
  // t = 2x: sum(4 x^2) has gradient 8x; sum(6x) has gradient 6.
  const Tensor xs = tensor({1.0, 2.0, -1.0, -3.0}, {2, 2});
  const Tensor expected = tensor({8.0, 16.0, 6.0, 6.0}, {2, 2});
  EXPECT_TRUE(allclose(vmap(grad(functionalize(loss)))(xs), expected));
  EXPECT_TRUE(allclose(vmap(functionalize(grad(loss)))(xs), expected));
}

// while_loop's cond_fn reads a, never t: the body's per-lane masking of the
// carry is the first read of t after the write.
TEST_F(ControlFlowFindings, WhileLoopCarryingAViewWrittenTensorUnderFunctionalize) {
  using Carry = std::pair<Tensor, Tensor>;
  auto f = [](const Tensor& x) {
    const Tensor t = scaled_through_a_view(x, full({2}, 2.0, kFloat64));
    return while_loop([](const Carry& c) { return c.first.sum() < 3.0; },
                      [](const Carry& c) { return Carry{c.first + c.second, c.second}; }, Carry{x, t})
        .first;
  };
  // Row [1, 2] sums to 3: no step. Row [0.5, 0.25], t = [1, 0.5]: [1.5, 0.75]
  // (sum 2.25), then [2.5, 1.25] (sum 3.75).
  const Tensor xs = tensor({1.0, 2.0, 0.5, 0.25}, {2, 2});
  const Tensor expected = tensor({1.0, 2.0, 2.5, 1.25}, {2, 2});
  EXPECT_TRUE(allclose(vmap(functionalize(f))(xs), expected));
  EXPECT_TRUE(allclose(vmap(f)(xs), expected));
}

TEST_F(ControlFlowFindings, ScanOverAViewWrittenTensorUnderFunctionalize) {
  auto f = [](const Tensor& x) {
    const Tensor t = scaled_through_a_view(x, tensor({1.0, 2.0, 3.0}, {3}));
    auto [last, ys] = scan([](const Tensor& c, const Tensor& e) { return std::pair{c + e, c * e}; },
                           t.sum({0}) * 0.0, t);
    return ys + last;
  };
  // t = [1, 4, 9]: carries 0, 1, 5, 14; ys = [0, 4, 45]; + 14.
  const Tensor x = tensor({1.0, 2.0, 3.0}, {3});
  EXPECT_TRUE(allclose(functionalize(f)(x), tensor({14.0, 18.0, 59.0}, {3})));
  EXPECT_TRUE(allclose(vmap(functionalize(f))(stack({x, x * 0.0}, 0)),
                       stack({tensor({14.0, 18.0, 59.0}, {3}), zeros({3}, kFloat64)}, 0)));
}

// As jax.lax.scan: no step runs on data; the result is the initial carry and
// ys of length 0 with the shape and dtype one step would give.
TEST_F(ControlFlowFindings, ScanOverALengthZeroDimReturnsTheInitialCarry) {
  auto step = [](const Tensor& c, const Tensor& x) { return std::pair{c + x, std::pair{x > 0.0, (c * x).sum()}}; };
  const Tensor init = tensor({1.5, -2.0}, {2});
  const Tensor xs = zeros({0, 2}, kFloat64);
  const auto [last, ys] = scan(step, init, xs);
  EXPECT_TRUE(allclose(last, init));
  EXPECT_EQ(ys.first.sizes().vec(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(ys.first.dtype(), kBool);
  EXPECT_EQ(ys.second.sizes().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(ys.second.dtype(), kFloat64);
  const auto [reversed_last, reversed_ys] = scan(step, init, xs, {.reverse = true});
  EXPECT_TRUE(allclose(reversed_last, init));
  EXPECT_EQ(reversed_ys.first.sizes().vec(), (std::vector<int64_t>{0, 2}));

  // Integer and bool xs keep their dtype in the step's example slice.
  auto count = [](const Tensor& c, const Tensor& x) { return std::pair{c + x.sum(), x}; };
  const auto [n, int_ys] = scan(count, zeros({}, kInt64), zeros({0, 3}, kInt64));
  EXPECT_EQ(n.item<int64_t>(), 0);
  EXPECT_EQ(int_ys.dtype(), kInt64);
  EXPECT_EQ(int_ys.sizes().vec(), (std::vector<int64_t>{0, 3}));
  const Tensor bool_ys = scan([](const Tensor& c, const Tensor& x) { return std::pair{c, x}; },
                             zeros({}, kFloat64), zeros({0, 4}, kBool))
                             .second;
  EXPECT_EQ(bool_ys.dtype(), kBool);
  EXPECT_EQ(bool_ys.sizes().vec(), (std::vector<int64_t>{0, 4}));
}

TEST_F(ControlFlowFindings, ScanOverALengthZeroDimUnderTransforms) {
  const Tensor xs = zeros({0, 2}, kFloat64);
  auto f = [&](const Tensor& init) {
    auto [last, ys] = scan([](const Tensor& c, const Tensor& x) { return std::pair{c * x.sin(), c * 2.0}; },
                           init, xs);
    return (last * 3.0).sum() + ys.sum();
  };
  const Tensor init = tensor({0.5, -1.0}, {2});
  // f(init) = 3 sum(init): the gradient is 3 everywhere, the tangent along v 3 sum(v).
  EXPECT_TRUE(allclose(grad(f)(init), full({2}, 3.0, kFloat64)));
  EXPECT_TRUE(allclose(jvp(f, std::tuple{init}, std::tuple{tensor({1.0, 2.0}, {2})}).second,
                       full({}, 9.0, kFloat64)));
  auto ys_of = [&](const Tensor& init_row) {
    return scan([](const Tensor& c, const Tensor& x) { return std::pair{c + x, c * x}; }, init_row, xs).second;
  };
  const Tensor batched_ys = vmap(ys_of)(stack({init, init * 2.0}, 0));
  EXPECT_EQ(batched_ys.sizes().vec(), (std::vector<int64_t>{2, 0, 2}));
  EXPECT_TRUE(allclose(functionalize(f)(init), full({}, -1.5, kFloat64)));
  // Traced with length 0, replayed with length 0.
  const Graph g = trace(f)(init);
  EXPECT_TRUE(allclose(g(init * 2.0).at(0), full({}, -3.0, kFloat64)));
}

TEST_F(ControlFlowFindings, MapOverALengthZeroDim) {
  const Tensor ys = map([](const Tensor& x) { return x.sum({0}) > 0.0; }, zeros({0, 2, 3}, kFloat32));
  EXPECT_EQ(ys.sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(ys.dtype(), kBool);
  auto f = [](const Tensor& x) { return map([](const Tensor& row) { return row * 2.0; }, x).sum() + x.sum() * 0.0; };
  EXPECT_TRUE(allclose(grad(f)(zeros({0, 2}, kFloat64)), zeros({0, 2}, kFloat64)));
}

// Doubles v until its sum reaches 10: from zeros it never ends.
Tensor doubled_past_ten(const Tensor& c) {
  return while_loop([](const Tensor& v) { return v.sum() < 10.0; }, [](const Tensor& v) { return v * 2.0; }, c);
}

std::pair<Tensor, Tensor> doubling_step(const Tensor& c, const Tensor& x) {
  Tensor next = doubled_past_ten(c + x);
  return std::pair{next, next * x};
}

// The length-0 case runs its step without data (Note [A length-0 scan runs no
// step]): a step whose while_loop would never end on zeros returns at once,
// with the initial carry and ys of the step's shape.
TEST_F(ControlFlowFindings, LengthZeroScanDoesNotRunItsStepsLoop) {
  const Tensor init = zeros({2}, kFloat64);
  const Tensor none = zeros({0, 2}, kFloat64);
  const auto [last, ys] = scan(doubling_step, init, none);
  EXPECT_TRUE(allclose(last, init));
  EXPECT_EQ(ys.sizes().vec(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(ys.dtype(), kFloat64);
  const Tensor mapped = map([](const Tensor& x) { return doubled_past_ten(x); }, none);
  EXPECT_EQ(mapped.sizes().vec(), (std::vector<int64_t>{0, 2}));
  // One step on data: [1, 1] + [0.5, 1] doubles twice to [6, 8] (sum 14), ys [3, 8].
  const auto [one_last, one_ys] = scan(doubling_step, ones({2}, kFloat64), tensor({0.5, 1.0}, {1, 2}));
  EXPECT_TRUE(allclose(one_last, tensor({6.0, 8.0}, {2})));
  EXPECT_TRUE(allclose(one_ys, tensor({3.0, 8.0}, {1, 2})));

  // Inside transforms the step's while_loop returns its carry at once.
  auto ys_of = [&](const Tensor& c) { return scan(doubling_step, c, none).second; };
  EXPECT_EQ(vmap(ys_of)(zeros({3, 2}, kFloat64)).sizes().vec(), (std::vector<int64_t>{3, 0, 2}));
  auto total = [&](const Tensor& c) { return scan(doubling_step, c, none).first.sum(); };
  EXPECT_TRUE(allclose(grad(total)(init), ones({2}, kFloat64)));
  EXPECT_TRUE(allclose(jvp(total, std::tuple{init}, std::tuple{tensor({1.0, 2.0}, {2})}).second,
                       full({}, 3.0, kFloat64)));
  // Traced with length 0 and replayed: the carry passes through.
  const Graph g = trace([&](const Tensor& c) { return scan(doubling_step, c, none).first; })(init);
  EXPECT_TRUE(allclose(g(tensor({4.0, -1.0}, {2})).at(0), tensor({4.0, -1.0}, {2})));
}

// Where the shapes need data (an item() on a fake) the length-0 case raises
// an error naming scan.
TEST_F(ControlFlowFindings, LengthZeroScanWhoseStepNeedsDataRaises) {
  auto reads = [](const Tensor& c, const Tensor& x) { return std::pair{c * x.sum().item<double>(), x}; };
  testing::expect_contains(testing::error_message([&] { scan(reads, zeros({2}, kFloat64), zeros({0, 2}, kFloat64)); }),
                           {"strata::scan", "length-0", "without data"});
}

// Found by the fuzzer's capturing while_loop (seeds 183, 279, 500, 645 of
// --seed 1): a body that captures the tensor which started its carry. The
// traced body took that tensor as its argument, so the capture read the carry
// of each iteration instead of the initial value.
TEST_F(ControlFlowFindings, TracedLoopBodyCapturingTheCarrysStart) {
  auto f = [](const Tensor& a) {
    using Carry = std::pair<Tensor, Tensor>;
    return while_loop([](const Carry& c) { return c.first < 2.0; },
                      [&a](const Carry& c) { return Carry{c.first + 1.0, c.second + a}; },
                      Carry{zeros({}, kFloat64), a})
        .second;
  };
  const Tensor a = tensor({1.0, -2.0}, {2});
  // Two steps of v + a from v = a: 3 a.
  EXPECT_TRUE(allclose(f(a), a * 3.0));
  const Graph g = trace(f)(a);
  EXPECT_TRUE(allclose(g(a).at(0), a * 3.0));
  EXPECT_TRUE(allclose(g(a * -0.5).at(0), a * -1.5));
}

// Found by the fuzzer's capturing while_loop under grad > jvp > vmap: with a
// per-sample trip count the body runs on every lane and a tensor it captures
// is swapped for its masked (batched) version, but the call kept the dispatch
// keys of the unbatched tensor, so the vmap level was skipped and the batched
// value reached the levels below ("a vmap that has already returned").
TEST_F(ControlFlowFindings, PerLaneLoopBodyCapturingAnUnbatchedTensorUnderGrad) {
  const Tensor one = ones({}, kFloat64);
  // v <- 2 v + c while v < 3: after n steps v = 2^n a + (2^n - 1) c, dv/da = 2^n.
  // c is made inside the transforms (a tensor of their levels, batched at
  // none), and c.sum() is a call on the capture alone.
  auto last = [&one](const Tensor& a) {
    const Tensor c = one.clone();
    return while_loop([](const Tensor& v) { return v < 3.0; },
                      [&c](const Tensor& v) { return v * 2.0 + c.sum(); }, a);
  };
  const Tensor x = tensor({0.5, 2.0, 4.0}, {3});  // 2 steps (to 5), 1 step (to 5), none
  EXPECT_TRUE(allclose(vmap(last)(x), tensor({5.0, 5.0, 4.0}, {3})));
  auto total = [&](const Tensor& a) { return vmap(last)(a).sum(); };
  EXPECT_TRUE(allclose(grad(total)(x), tensor({4.0, 2.0, 1.0}, {3})));
  EXPECT_TRUE(allclose(jvp(vmap(last), std::tuple{x}, std::tuple{ones({3}, kFloat64)}).second,
                       tensor({4.0, 2.0, 1.0}, {3})));
}

// Found by the fuzzer's capturing cond under trace > grad > vmap: masking a
// captured tensor for the lanes of a per-sample predicate calls where(), whose
// batching rule's own calls reached the masking mode as if the branch made
// them, so their arguments were masked again and a batched value reached the
// trace below the layers.
TEST_F(ControlFlowFindings, TracedGradOfPerLaneCondCapturingABatchedTensor) {
  const Tensor y = tensor({0.3, 0.3}, {2});
  // Per sample a: y * a when sum(a) < 1.2, else y - sin(a); a is captured.
  auto per_sample = [&y](const Tensor& a) {
    return cond(
        y.sum() > a.sum() * 0.5, [&a](const Tensor& u) { return u * a; },
        [&a](const Tensor& u) { return u - a.sin(); }, y);
  };
  // Samples along dim 1: the batching rules move the batch dim first.
  auto loss = [&](const Tensor& x) { return vmap(per_sample, {.in_dims = {1}})(x).sum(); };
  // d/da: y, or -cos(a).
  auto expected = [](const Tensor& x) {
    std::vector<Tensor> rows;
    for (int64_t b = 0; b < x.size(1); ++b) {
      const Tensor a = x.select(1, b);
      rows.push_back(a.sum().item<double>() < 1.2 ? full({2}, 0.3, kFloat64) : -a.cos());
    }
    return stack(rows, 1);
  };
  const Tensor x = tensor({0.1, 1.0, 0.2, 2.0}, {2, 2});
  EXPECT_TRUE(allclose(grad(loss)(x), expected(x)));
  const Graph g = trace(grad(loss))(x);
  EXPECT_TRUE(allclose(g(x).at(0), expected(x)));
  const Tensor swapped = tensor({1.5, -0.5, 0.5, 0.25}, {2, 2});
  EXPECT_TRUE(allclose(g(swapped).at(0), expected(swapped)));
}

}  // namespace
}  // namespace strata
