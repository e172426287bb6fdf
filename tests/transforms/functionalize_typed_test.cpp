// functionalize's typed kernels (Note [Typed functionalize kernels]): unary and
// binary ops and their in-place forms run at the level without the boxed
// interpreter, in-place ones straight into the root's memory when only its
// family can read it. Each test has values worked out by hand, so a write that
// the fast path loses, applies twice or lets a stale view miss shows.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/test_support.h"
#include "tests/transforms/exact_values.h"
#include "transforms/functionalize/functional_tensor.h"

namespace strata {
namespace {

using testing::expect_values;
using testing::num;
using testing::vec;

// The memory under the root of a tensor of a functionalize level.
const void* root_memory(const Tensor& t) {
  const auto* w = functionalization::as_functional(t);
  return w != nullptr ? w->base()->value.data_ptr() : nullptr;
}

// In-place ops on a root made inside f go into its memory; a view taken before
// them, and a value computed before them, read what eager code reads.
TEST(FunctionalizeTyped, ViewReadAfterInPlaceWritesToItsRoot) {
  std::vector<bool> kept;
  auto f = [&](const Tensor& x) {
    Tensor y = x.clone();
    const Tensor v = y.narrow(0, 1, 2);
    const Tensor old = y * 1.0;
    const void* before = root_memory(y);
    y.add_(num(1.0));
    y.mul_(y);
    kept.push_back(root_memory(y) == before);
    return std::pair{v * 1.0, y + old};
  };
  // With views removed v is a copy: only regeneration after the writes updates it.
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    SCOPED_TRACE(remove == Remove::Mutations ? "Mutations" : "MutationsAndViews");
    kept.clear();
    Tensor x = vec({1, 2, 3, 4});
    auto [v, sum] = functionalize(f, remove)(x);
    expect_values(v, {9, 16});            // ((2..5)^2)[1:3]
    expect_values(sum, {5, 11, 19, 29});  // (2..5)^2 + (1..4)
    expect_values(x, {1, 2, 3, 4});
    EXPECT_EQ(kept, std::vector<bool>{true});  // the typed in-place path ran
  }
}

// Two views of one root written through each other: every write reaches the
// root and the other view, with views removed (copies: the boxed path) or not.
TEST(FunctionalizeTyped, WritesThroughTwoViewsOfOneRoot) {
  auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    const Tensor a = y.narrow(0, 0, 2);
    const Tensor b = y.narrow(0, 2, 2);
    a.add_(b);  // a = (4, 6)
    b.mul_(a);  // b = (12, 24)
    a.sub_(num(1.0));
    return std::pair{y * 1.0, a + b};
  };
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    SCOPED_TRACE(remove == Remove::Mutations ? "Mutations" : "MutationsAndViews");
    Tensor x = vec({1, 2, 3, 4});
    auto [y, ab] = functionalize(f, remove)(x);
    expect_values(y, {3, 5, 12, 24});
    expect_values(ab, {15, 29});
    expect_values(x, {1, 2, 3, 4});
  }
}

// A decomposed in-place op (zero_) through a decomposed view (narrow) of a view
// (select): the root and a view of another row taken before the write agree.
TEST(FunctionalizeTyped, DecomposedWriteThroughAViewOfAView) {
  auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    const Tensor row1 = y.select(0, 1);
    const Tensor corner = y.select(0, 0).narrow(0, 1, 2);
    corner.zero_();
    row1.add_(corner.narrow(0, 0, 1));  // adds 0: the write reached corner
    y.select(0, 1).narrow(0, 0, 2).mul_(num(10.0));
    return std::pair{y * 1.0, row1.narrow(0, 0, 2) + corner};
  };
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    SCOPED_TRACE(remove == Remove::Mutations ? "Mutations" : "MutationsAndViews");
    Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3});
    auto [y, sum] = functionalize(f, remove)(x);
    expect_values(y, {1, 0, 0, 40, 50, 6});
    expect_values(sum, {40, 50});
    expect_values(x, {1, 2, 3, 4, 5, 6});
  }
}

// An op whose arguments all come from outside the level (a captured tensor)
// still gives a tensor of the level, so a batched write into it is made out of
// place under vmap, where plain vmap refuses it; the captured tensor is untouched.
TEST(FunctionalizeTyped, ResultOfCapturedTensorsIsOfTheLevel) {
  const Tensor c = vec({1, 2, 3, 4});
  auto f = [&](const Tensor& x) {
    Tensor t = c * 2.0;
    Tensor u = c + c;
    t.add_(x);
    u.mul_(x);
    return t + u;
  };
  const Tensor xs = tensor({1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 2.0, 3.0}, {2, 4});
  // Row i: 2c + x + 2c * x.
  expect_values(vmap(functionalize(f))(xs), {5, 9, 13, 17, 2, 9, 20, 35});
  expect_values(c, {1, 2, 3, 4});
  EXPECT_THROW(vmap(f)(xs), Error);
}

// Writes to a root and through views of it under grad, in both orders: with
// another layer on the stack the in-place kernels hand the call to the boxed
// interpreter (out of place); the gradient is the hand-derived one.
TEST(FunctionalizeTyped, WritesUnderGradInBothOrders) {
  // y = 3 (x + x); v = y[0:2] = 6 x[0:2]; sum(v * v) = 36 sum(x[0:2]^2).
  auto f = [](const Tensor& x) {
    Tensor y = x * 1.0;
    const Tensor v = y.narrow(0, 0, 2);
    y.add_(x);
    y.mul_(num(3.0));
    return (v * v).sum();
  };
  const Tensor x = vec({1, 2, 3, 4});
  const std::vector<double> expected{72, 144, 0, 0};
  expect_values(grad(f)(x), expected);
  expect_values(grad(functionalize(f))(x), expected);
  expect_values(functionalize(grad(f))(x), expected);
  expect_values(functionalize(grad(f), Remove::MutationsAndViews)(x), expected);
  const Tensor xs = tensor({1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.0, 0.0}, {2, 4});
  expect_values(vmap(grad(functionalize(f)))(xs), {72, 144, 0, 0, -72, 36, 0, 0});
}

// narrow is recorded as one view step: a write through it into an input (which
// the caller holds: written out of place) or under vmap (a layer below: out of
// place too) lands in the narrowed rows, negative start included, and a view
// taken before the writes regenerates from them.
TEST(FunctionalizeTyped, WritesThroughNarrowOutOfPlace) {
  auto f = [](const Tensor& x) {
    const Tensor tail = x.narrow(0, 2, 2);
    x.narrow(0, -2, 2).mul_(num(10.0));
    x.narrow(0, 1, 2).narrow(0, 0, 1).add_(num(1.0));
    return std::pair{x * 1.0, tail * 1.0};
  };
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    SCOPED_TRACE(remove == Remove::Mutations ? "Mutations" : "MutationsAndViews");
    Tensor x = vec({1, 2, 3, 4});
    auto [out, tail] = functionalize(f, remove)(x);
    expect_values(out, {1, 3, 30, 40});
    expect_values(tail, {30, 40});
    expect_values(x, {1, 3, 30, 40});  // the input is written back
  }
  Tensor xs = tensor({1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 2.0, 3.0}, {2, 4});
  auto [out, tail] = vmap(functionalize(f))(xs);
  expect_values(out, {1, 3, 30, 40, 0, 2, 20, 30});
  expect_values(tail, {30, 40, 20, 30});
}

// select, slice and narrow are made from the value's layout (Note [View
// layouts]), here over a transposed root, with negative indices and a step:
// the writes through them land where eager code puts them, and a bad view
// raises eager's error.
TEST(FunctionalizeTyped, ViewsByLayoutOverATransposedRoot) {
  auto f = [](const Tensor& x) {
    const Tensor z = x.clone();
    const Tensor t = z.t();  // t[i][j] = z[j][i], [4, 3]
    const Tensor column = t.slice(0, 1, std::nullopt, 2).select(1, -1);  // t[1][2], t[3][2]
    column.mul_(num(10.0));
    t.narrow(0, -2, 2).add_(num(1.0));  // t's rows 2 and 3: z's columns 2 and 3
    return std::pair{z * 1.0, column * 1.0};
  };
  const Tensor x = arange(12).to(kFloat64).reshape({3, 4});
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    SCOPED_TRACE(remove == Remove::Mutations ? "Mutations" : "MutationsAndViews");
    auto [z, column] = functionalize(f, remove)(x);
    expect_values(z, {0, 1, 3, 4, 4, 5, 7, 8, 8, 90, 11, 111});
    expect_values(column, {90, 111});
  }
  const std::vector<std::function<void(const Tensor&)>> bad_views{
      [](const Tensor& y) { (void)y.select(1, 4); },
      [](const Tensor& y) { (void)y.select(2, 0); },
      [](const Tensor& y) { (void)y.slice(0, 0, 2, 0); },
      [](const Tensor& y) { (void)y.narrow(1, 2, 3); },
      [](const Tensor& y) { (void)y.narrow(0, -4, 1); },
  };
  for (const auto& view : bad_views) {
    const std::string eager = testing::error_message([&] { view(x.clone()); });
    ASSERT_FALSE(eager.empty());
    const std::string functionalized = testing::error_message([&] {
      functionalize([&](const Tensor& y) {
        view(y.clone());
        return y;
      })(x);
    });
    EXPECT_EQ(functionalized, eager);
  }
}

// With views removed the typed kernels still make views below the level (no
// one sees them there), but no output shares memory with another output or an
// input: writing one output leaves the others and the input as they were.
TEST(FunctionalizeTyped, ViewsRemovedOutputsOwnTheirMemory) {
  auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    const Tensor a = y.narrow(0, 1, 2);
    a.mul_(num(10.0));
    return std::tuple{y, a, x.narrow(0, 0, 2)};
  };
  Tensor x = vec({1, 2, 3, 4});
  auto [y, a, head] = functionalize(f, Remove::MutationsAndViews)(x);
  expect_values(y, {1, 20, 30, 4});
  expect_values(a, {20, 30});
  expect_values(head, {1, 2});
  a.fill_(0.0);
  head.fill_(0.0);
  expect_values(y, {1, 20, 30, 4});
  expect_values(x, {1, 2, 3, 4});
  // Without views removed the outputs alias as in eager code.
  auto [y2, a2, head2] = functionalize(f)(x);
  a2.fill_(0.0);
  head2.fill_(-1.0);
  expect_values(y2, {1, 0, 0, 4});
  expect_values(x, {-1, -1, 3, 4});
}

// A tensor of a finished functionalize call cannot reach an op unnoticed.
TEST(FunctionalizeTyped, TensorOfAFinishedLevelIsRefused) {
  Tensor leaked;
  functionalize([&](const Tensor& x) {
    leaked = x * 2.0;
    return x * 1.0;
  })(vec({1, 2}));
  EXPECT_THROW(leaked + leaked, Error);
  EXPECT_THROW(leaked.add_(leaked), Error);
}

}  // namespace
}  // namespace strata
