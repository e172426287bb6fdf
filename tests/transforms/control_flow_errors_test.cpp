// Bad input to the control-flow operators, and the higher-order operator
// mechanism's own errors: each a strata::Error naming what is wrong, with the
// layer stack restored afterwards.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include "tests/test_support.h"

namespace st = strata;

namespace {

using st::testing::error_message;
using st::testing::expect_contains;
using ControlFlowErrors = st::testing::TransformStateRestored;

auto identity = [](const st::Tensor& x) { return x; };

TEST_F(ControlFlowErrors, PredicateMustBeA0DimBool) {
  const st::Tensor x = st::tensor({1.0, 2.0}, {2});
  expect_contains(error_message([&] { st::cond(x > 0.0, identity, identity, x); }),
                  {"strata::cond", "predicate", "0-dim Bool", "[2]"});
  expect_contains(error_message([&] { st::cond(x.sum(), identity, identity, x); }),
                  {"strata::cond", "predicate", "Float64"});
  // Also under grad.
  expect_contains(error_message([&] {
                    st::grad([&](const st::Tensor& v) {
                      return st::cond(v.sum(), identity, identity, v).sum();
                    })(x);
                  }),
                  {"strata::cond", "0-dim Bool", "Float64"});
}

TEST_F(ControlFlowErrors, BranchOutputsThatDifferNameTheLeafAndTheField) {
  const st::Tensor xs = st::tensor({1.0, -2.0, 3.0}, {3});
  using P = std::pair<st::Tensor, st::Tensor>;
  auto shapes = [](const st::Tensor& x) {
    return st::cond(
        x > 0.0, [](const st::Tensor& v) { return P{v, v}; },
        [](const st::Tensor& v) { return P{v, v.unsqueeze(0)}; }, x);
  };
  expect_contains(error_message([&] { st::vmap(shapes)(xs); }),
                  {"strata::cond", "leaf 1", "shape", "true_fn has []", "false_fn has [1]"});
  auto dtypes = [](const st::Tensor& x) {
    return st::cond(
        x > 0.0, [](const st::Tensor& v) { return P{v, v}; },
        [](const st::Tensor& v) { return P{v > 0.0, v}; }, x);
  };
  expect_contains(error_message([&] { st::vmap(dtypes)(xs); }),
                  {"strata::cond", "leaf 0", "dtype", "Float64", "Bool"});
  auto counts = [](const st::Tensor& x) {
    return st::cond(
        x > 0.0, [](const st::Tensor& v) { return std::vector<st::Tensor>{v}; },
        [](const st::Tensor& v) { return std::vector<st::Tensor>{v, v}; }, x);
  };
  expect_contains(error_message([&] { st::vmap(counts)(xs); }),
                  {"strata::cond", "structure", "1 tensor leaves", "2"});
}

TEST_F(ControlFlowErrors, WhileLoopConditionMustReturnA0DimBool) {
  const st::Tensor x = st::tensor({1.0, 2.0}, {2});
  auto step = [](const st::Tensor& v) { return v * 2.0; };
  expect_contains(
      error_message([&] { st::while_loop([](const st::Tensor& v) { return v.sum(); }, step, x); }),
      {"strata::while_loop", "cond_fn's result", "0-dim Bool", "Float64"});
  expect_contains(
      error_message([&] { st::while_loop([](const st::Tensor& v) { return v < 3.0; }, step, x); }),
      {"strata::while_loop", "cond_fn's result", "[2]"});
}

TEST_F(ControlFlowErrors, BodyThatChangesTheCarryNamesTheLeaf) {
  using C = std::pair<st::Tensor, st::Tensor>;
  const C init{st::tensor({1.0}, {}), st::tensor({1.0, 2.0}, {2})};
  auto go_on = [](const C& c) { return c.first < 5.0; };
  expect_contains(
      error_message([&] {
        st::while_loop(go_on, [](const C& c) { return C{c.first + 1.0, c.second.sum()}; }, init);
      }),
      {"strata::while_loop", "leaf 1", "shape", "[2]", "[]"});
  expect_contains(
      error_message([&] {
        st::while_loop(go_on, [](const C& c) { return C{c.first + 1.0, c.second > 0.0}; }, init);
      }),
      {"strata::while_loop", "leaf 1", "dtype", "Bool"});
  auto bad_step = [](const st::Tensor& h, const st::Tensor& x) {
    return std::pair{(h + x).unsqueeze(0), x};
  };
  expect_contains(error_message([&] { st::scan(bad_step, st::zeros({2}), st::ones({3, 2})); }),
                  {"strata::scan", "leaf 0", "shape"});
}

TEST_F(ControlFlowErrors, MissingKeyNamesTheOperatorAndTheKey) {
  static st::HigherOrderOperator twice("test::twice");
  static const bool registered =
      (twice.impl(st::HopKey::Backend,
                  [](const st::HigherOrderOperator&, const st::HopArgs& args) {
                    return args.fns[0](args.fns[0](args.operands));
                  }),
       true);
  (void)registered;
  auto call = [](const st::Tensor& x) {
    st::HopArgs args;
    args.operands = {x};
    args.fns = {[](const std::vector<st::Tensor>& v) { return std::vector<st::Tensor>{v[0] * 3.0}; }};
    return twice(args).front();
  };
  const st::Tensor x = st::tensor({1.0, 2.0}, {2});
  EXPECT_TRUE(st::testing::allclose(call(x), x * 9.0));
  expect_contains(error_message([&] { st::vmap(call)(x); }),
                  {"test::twice", "no implementation for key Vmap", "vmap(level", "Backend"});
  expect_contains(error_message([&] {
                    twice.impl(st::HopKey::Backend,
                               [](const st::HigherOrderOperator&, const st::HopArgs&) {
                                 return std::vector<st::Tensor>{};
                               });
                  }),
                  {"test::twice", "key Backend", "already registered"});
  expect_contains(error_message([&] { st::HigherOrderOperator again("test::twice"); }),
                  {"test::twice", "already registered"});
  EXPECT_EQ(st::find_higher_order_op("test::twice"), &twice);
  EXPECT_EQ(st::find_higher_order_op("strata::cond"), &st::control_flow::cond_op());
  EXPECT_EQ(st::find_higher_order_op("test::no_such_op"), nullptr);
}

TEST_F(ControlFlowErrors, ARecordingModeThatIsNotTracesIsRefused) {
  const st::Tensor x = st::tensor({1.0, 2.0}, {2});
  auto f = [](const st::Tensor& v) {
    return st::cond(v.sum() > 0.0, [](const st::Tensor& a) { return a.sin(); },
                    [](const st::Tensor& a) { return a.cos(); }, v);
  };
  struct Recording : st::DispatchMode {
    bool allows_inline_higher_order_ops() const override { return false; }
  };
  expect_contains(error_message([&] {
                    st::DispatchModeGuard guard(std::make_shared<Recording>());
                    f(x);
                  }),
                  {"strata::cond", "not trace()'s"});
  // A mode that only observes sees the taken branch's ops.
  std::map<std::string, int> counts;
  {
    st::DispatchModeGuard guard(std::make_shared<st::testing::CountingMode>(counts));
    f(x);
  }
  EXPECT_EQ(counts["strata::sin"], 1);
  EXPECT_EQ(counts["strata::cos"], 0);
}

}  // namespace
