// functionalize(f, Remove::MutationsAndViews) on the composite views t, split and
// unbind: each runs as its _copy form (t_copy, split_copy, unbind_copy), a write
// through one of their results reaches the base and every other result, and the
// values agree with the same function run eagerly. view_copy of a tensor that
// view refuses gives what reshape gives.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "tests/test_support.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

void expect_equal_values(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  EXPECT_EQ(actual.to_vector<double>(), expected.to_vector<double>());
}

Tensor input() { return arange(12, kFloat64).reshape({3, 4}) * 0.5 - 1.0; }

// Writes through t, split and unbind results, then reads views taken before
// the writes (they must see them) and returns a sum of everything.
Tensor writes_through_composite_views(const Tensor& x) {
  Tensor y = x.clone();
  const Tensor yt = y.t();
  const std::vector<Tensor> rows = y.split(2, 0);
  const std::vector<Tensor> columns = y.unbind(1);
  yt.select(0, 1).mul_(tensor({3.0}, {}));                 // column 1 of y
  rows[1].add_(tensor({10.0}, {}));                        // row 2 of y
  columns[3].narrow(0, 0, 2).copy_(rows[0].select(1, 0));  // column 3, rows 0-1
  return y * 2.0 + yt.t() + rows[0].sum() + columns[1].sum();
}

TEST(FunctionalizeCopies, WritesThroughTSplitAndUnbindMatchEager) {
  const Tensor x = input();
  const Tensor eager = writes_through_composite_views(x);
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    expect_equal_values(functionalize(&writes_through_composite_views, remove)(x), eager);
  }
}

TEST(FunctionalizeCopies, MutationsAndViewsRecordsTheCopyForms) {
  const auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    const std::vector<Tensor> rows = y.split(2, 0);
    rows[0].mul_(tensor({2.0}, {}));
    const std::vector<Tensor> columns = y.t().unbind(0);
    return std::pair{rows[0] + 1.0, columns[2] * 3.0};
  };
  const Tensor x = input();
  const Graph g = trace(functionalize(f, Remove::MutationsAndViews))(x);
  const std::vector<std::string> ops = g.op_names();
  const auto has = [&](const char* name) {
    return std::find(ops.begin(), ops.end(), name) != ops.end();
  };
  for (const char* copy :
       {"strata::split_copy.Tensor", "strata::t_copy", "strata::unbind_copy.int"}) {
    EXPECT_TRUE(has(copy)) << copy << " not in\n" << g.to_string();
  }
  for (const char* view : {"strata::split.Tensor", "strata::unbind.int", "strata::t",
                           "strata::transpose.int", "strata::slice.Tensor", "strata::select.int"}) {
    EXPECT_FALSE(has(view)) << view << " in\n" << g.to_string();
  }
  const auto [a, b] = functionalize(f, Remove::MutationsAndViews)(x);
  const auto [ea, eb] = f(x);
  expect_equal_values(a, ea);
  expect_equal_values(b, eb);
}

// A split piece written after the base was: the piece regenerates from the
// written base (by split_copy) before it is read.
TEST(FunctionalizeCopies, PiecesRegenerateAfterAWriteToTheBase) {
  const auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    const std::vector<Tensor> rows = y.split(1, 0);
    const std::vector<Tensor> columns = y.unbind(-1);
    y.mul_(tensor({-2.0}, {}));
    columns[0].add_(rows[2].sum());
    return rows[1] + columns[0].sum();
  };
  const Tensor x = input();
  expect_equal_values(functionalize(f, Remove::MutationsAndViews)(x), f(x));
}

// Calls the operator `name` boxed on `args`; its first result.
IValue call(const char* name, const char* overload, Stack args) {
  const std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema({name, overload});
  EXPECT_TRUE(op.has_value()) << name;
  op->call_boxed(args);
  return args[0];
}

TEST(FunctionalizeCopies, CopyFormsHoldTheirViewsValuesInMemoryOfTheirOwn) {
  const Tensor x = input();
  const Tensor t = call("strata::t_copy", "", {x}).to_tensor();
  EXPECT_NE(t.impl()->underlying_storage(), x.impl()->underlying_storage());
  expect_equal_values(t, x.t());
  const std::vector<Tensor> rows = call("strata::split_copy", "Tensor", {x, 2, 0}).to_tensor_list();
  const std::vector<Tensor> row_views = x.split(2, 0);
  ASSERT_EQ(rows.size(), row_views.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_NE(rows[i].impl()->underlying_storage(), x.impl()->underlying_storage());
    expect_equal_values(rows[i], row_views[i]);
  }
  const std::vector<Tensor> columns = call("strata::unbind_copy", "int", {x, 1}).to_tensor_list();
  ASSERT_EQ(columns.size(), 4u);
  for (size_t i = 0; i < columns.size(); ++i) {
    expect_equal_values(columns[i], x.select(1, static_cast<int64_t>(i)));
  }
}

// view refuses to merge a transposed tensor's dims; view_copy gives reshape's
// row-major values, as PyTorch's view_copy does.
TEST(FunctionalizeCopies, ViewCopyOfWhatViewRefusesIsReshapes) {
  const Tensor xt = input().t();
  EXPECT_THROW(xt.view({12}), Error);
  const Tensor flat = call("strata::view_copy", "", {xt, std::vector<int64_t>{12}}).to_tensor();
  expect_equal_values(flat, xt.reshape({12}));
  EXPECT_EQ(flat.to_vector<double>()[1], xt.select(0, 0).select(0, 1).item<double>());
}

// Each sample's region is addressed from the sample's own layout; a region
// location that is none of the sample's elements is dropped, not written into
// the next sample. Expected values by hand.
TEST(FunctionalizeCopies, AsStridedScatterBatchesWithoutTheLoop) {
  const uint64_t loops = batching::loop_fallback_calls_on_this_thread();
  const Tensor self = arange(10, kFloat64);
  const Tensor src = arange(6, kFloat64).reshape({3, 2}) + 100.0;
  // An unbatched self, a batched src, an explicit storage offset: locations 1 and 4.
  const Tensor out =
      vmap([&](const Tensor& s) { return as_strided_scatter(self, s, {2}, {3}, 1); })(src);
  for (int64_t b = 0; b < 3; ++b) {
    std::vector<double> expected = self.to_vector<double>();
    expected[1] = 100.0 + 2 * b;
    expected[4] = 101.0 + 2 * b;
    EXPECT_EQ(out.select(0, b).to_vector<double>(), expected) << "sample " << b;
  }
  // Samples are columns (stride 3): of locations 0 and 1 only 0 is a sample's.
  const Tensor columns = arange(12, kFloat64).reshape({4, 3});
  const Tensor written =
      vmap([](const Tensor& c,
              const Tensor& s) { return as_strided_scatter(c, s, {2}, {1}, std::nullopt); },
           {.in_dims = {1, 0}})(columns, src);
  for (int64_t b = 0; b < 3; ++b) {
    const std::vector<double> expected{100.0 + 2 * b, 3.0 + b, 6.0 + b, 9.0 + b};
    EXPECT_EQ(written.select(0, b).to_vector<double>(), expected) << "sample " << b;
  }
  EXPECT_EQ(batching::loop_fallback_calls_on_this_thread(), loops);
}

}  // namespace
}  // namespace strata
