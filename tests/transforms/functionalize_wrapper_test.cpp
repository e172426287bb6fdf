// The functional wrappers themselves (transforms/functionalize/functional_tensor.h):
// a root reads its base's value rather than holding it again (Note [A root's
// value]), wrappers and bases freed on another thread than the one that made
// them, and the root layout that only a view made by as_strided records.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/transforms/exact_values.h"
#include "transforms/functionalize/functional_tensor.h"

namespace strata {
namespace {

using functionalization::as_functional;
using functionalization::FunctionalTensorWrapper;

using testing::expect_values;
using testing::num;
using testing::vec;

int members(const Tensor& t) {
  int n = 0;
  for (const FunctionalTensorWrapper* w = as_functional(t)->base()->members; w != nullptr;
       w = w->next_member()) {
    ++n;
  }
  return n;
}

// A root made inside f reads the value its base holds, held once: so the
// family alone holds the root's memory, and a write to the root goes into it.
TEST(FunctionalizeWrapper, RootReadsItsBasesValue) {
  auto f = [](const Tensor& x) {
    Tensor y = x * 2.0;
    const FunctionalTensorWrapper* w = as_functional(y);
    EXPECT_EQ(&w->value(), &w->base()->value);
    EXPECT_EQ(w->value().impl()->use_count(), 1u);
    EXPECT_TRUE(w->base()->held_only_by_family());
    const void* memory = w->base()->value.data_ptr();
    y.add_(x);
    EXPECT_EQ(w->base()->value.data_ptr(), memory);
    return y;
  };
  expect_values(functionalize(f)(vec({1, 2, 3})), {3, 6, 9});
}

// Under grad a write through a view is made out of place: the root is stale
// until it is read, and then reads the written value (its base's), as does a
// view taken before the write; the gradient shows both.
TEST(FunctionalizeWrapper, StaleRootReadsTheWrittenValue) {
  // y = x; y[1:3] *= 3; head = y[0:2] = (x0, 3 x1);
  // sum(y * y) + sum(head) = x0^2 + 9 (x1^2 + x2^2) + x0 + 3 x1.
  auto f = [](const Tensor& x) {
    Tensor y = x * 1.0;
    const Tensor head = y.narrow(0, 0, 2);
    y.narrow(0, 1, 2).mul_(num(3.0));
    EXPECT_TRUE(as_functional(y)->is_stale());
    const Tensor out = (y * y).sum();
    EXPECT_FALSE(as_functional(y)->is_stale());
    return out + head.sum();
  };
  expect_values(grad(functionalize(f))(vec({1, 2, 3})), {3, 39, 54});
}

// A view freed on another thread leaves its root's member list; the root,
// then held by its family alone, is written in place again. A base whose last
// wrapper dies on another thread is freed there, and the next wrappers on this
// thread are made as before.
TEST(FunctionalizeWrapper, WrappersFreedOnAnotherThread) {
  auto f = [](const Tensor& x) {
    Tensor y = x * 1.0;
    Tensor view = y.narrow(0, 0, 2);
    view.mul_(num(2.0));
    EXPECT_EQ(members(y), 2);
    std::thread([dropped = std::move(view)]() mutable { dropped = Tensor(); }).join();
    EXPECT_EQ(members(y), 1);
    const void* memory = as_functional(y)->base()->value.data_ptr();
    y.add_(num(1.0));
    EXPECT_EQ(as_functional(y)->base()->value.data_ptr(), memory);

    Tensor other = x * 3.0;
    Tensor other_view = other.narrow(0, 1, 2);
    other = Tensor();  // the view is now the family's last wrapper
    expect_values(other_view * 1.0, {6, 9});
    std::thread([last = std::move(other_view)]() mutable { last = Tensor(); }).join();
    return y + x * 1.0;
  };
  const Tensor x = vec({1, 2, 3});
  for (int round = 0; round < 3; ++round) expect_values(functionalize(f)(x), {4, 7, 7});
}

// A view made by as_strided records its root's layout: when the root is
// rewritten out of place (an input: the caller holds it) with the same layout
// the view regenerates from it; with another layout it is refused, where the
// same memory offsets would name other elements.
TEST(FunctionalizeWrapper, AsStridedViewRegeneratesOnlyOnItsRootsLayout) {
  auto f = [](const Tensor& x) {
    const Tensor v = x.as_strided({2}, {1}, 0);
    x.add_(num(1.0));
    return v * 1.0;
  };
  // Eager: memory offsets 0 and 1 of x + 1.
  expect_values(functionalize(f)(vec({1, 2, 3, 4})), {2, 3});
  // x = [[0, 2, 4], [1, 3, 5]] over memory 0..5: offsets 0 and 1 are x[0, 0]
  // and x[1, 0]; the written value is laid out row-major, where they are not.
  expect_values(f(arange(6).to(kFloat64).reshape({3, 2}).t()), {1, 2});
  try {
    functionalize(f)(arange(6).to(kFloat64).reshape({3, 2}).t());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("as_strided"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata
