// functionalize: the same values as eager code (outputs and the inputs' final
// values) for mutation-heavy functions, with and without views removed; its
// compositions with grad, jvp and vmap in both orders; the cases it refuses.
// Every expectation compares against the same function run eagerly (or, for
// derivatives, against the transform of the unfunctionalized function).
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <functional>

#include "tests/test_support.h"
#include "transforms/functionalize/functional_tensor.h"

namespace strata {
namespace {

using testing::error_message;
using testing::expect_contains;

void expect_same(const Tensor& actual, const Tensor& expected, double tol = 1e-12) {
  ASSERT_TRUE(actual.defined());
  ASSERT_EQ(actual.sizes(), expected.sizes());
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << "element " << i;
  }
}

Tensor sample(const std::vector<int64_t>& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen, kFloat64);
}

// A 0-dim Float64 tensor, for in-place ops taking a tensor.
Tensor num(double v) { return tensor({v}, {}); }

using Fn = std::function<Tensor(const Tensor&)>;

// Runs f eagerly and under functionalize (each on its own copy of x): the
// outputs and the final values of x must agree.
void expect_functionalize_matches(const Fn& f, const Tensor& x, Remove remove) {
  Tensor eager_x = x.clone();
  Tensor func_x = x.clone();
  Tensor eager = f(eager_x);
  Tensor functional = functionalize(f, remove)(func_x);
  expect_same(functional, eager);
  expect_same(func_x, eager_x);
}

// f writes intermediates through views: grad(f) (issue 21, part 1),
// grad(functionalize(f)) and functionalize(grad(f)) must agree.
Tensor writes_through_views(const Tensor& x) {
  Tensor y = x.clone();
  Tensor y0 = y.select(0, 0);
  y.select(0, 1).mul_(y0);
  y.mul_(y);
  Tensor z = zeros({4}, kFloat64);
  z.narrow(0, 1, 3).copy_(y.select(0, 1));
  return (z * z).sum() + y0.sin().sum();
}

struct Case {
  const char* name;
  Fn f;
  std::vector<int64_t> shape;
};

std::vector<Case> mutation_heavy_functions() {
  return {
      {"intermediate add_ mul_",
       [](const Tensor& x) {
         Tensor y = x.clone();
         y.add_(x);
         y.mul_(y);
         return y * x;
       },
       {2, 3}},
      {"input written directly",
       [](const Tensor& x) {
         x.mul_(num(2.0));
         x.add_(num(1.0));
         return x.sin();
       },
       {3}},
      {"input written through a select view",
       [](const Tensor& x) {
         x.select(0, 1).mul_(num(3.0));
         return x.sum({1}, false);
       },
       {2, 3}},
      {"view taken before its base is written",
       [](const Tensor& x) {
         Tensor y = x.clone();
         Tensor y0 = y.select(0, 0);
         y.mul_(y);
         return y0 * 1.0;
       },
       {3}},
      {"narrow of fresh zeros copied into",
       [](const Tensor& x) {
         Tensor z = zeros({5}, kFloat64);
         z.narrow(0, 1, 3).copy_(x);
         return z * z;
       },
       {3}},
      {"view of a view written; other views see it",
       [](const Tensor& x) {
         Tensor y = x.clone();
         Tensor row = y.select(0, 1);
         Tensor col = y.transpose(0, 1).select(0, 2);
         col.add_(num(10.0));
         row.mul_(row);
         return y + col.sum() + row.sum();
       },
       {2, 3}},
      {"returned view reflects a later write",
       [](const Tensor& x) {
         Tensor v = x.narrow(0, 0, 2);
         x.fill_(0.5);
         x.select(0, 0).zero_();
         return v;
       },
       {4}},
      {"fill_ and copy_ with broadcast and relu_",
       [](const Tensor& x) {
         Tensor y = x.clone();
         y.select(1, 0).fill_(-2.0);
         y.relu_();
         y.narrow(1, 1, 2).copy_(x.select(1, 2).unsqueeze(1));
         return y;
       },
       {3, 3}},
      {"writes through views, for the compositions", &writes_through_views, {2, 3}},
      {"transposed input written (pytorch#133512)",
       [](const Tensor& x) {
         Tensor t = x.t();
         t.add_(num(1.0));
         return t.reshape({6});
       },
       {2, 3}},
  };
}

TEST(Functionalize, MatchesEagerValuesAndFinalInputs) {
  uint64_t seed = 1;
  for (const Case& c : mutation_heavy_functions()) {
    SCOPED_TRACE(c.name);
    const Tensor x = sample(c.shape, seed++);
    expect_functionalize_matches(c.f, x, Remove::Mutations);
    expect_functionalize_matches(c.f, x, Remove::MutationsAndViews);
  }
}

TEST(Functionalize, NothingBelowTheLevelIsWrittenButTheInputsOnce) {
  std::map<std::string, int> counts;
  Tensor x = sample({2, 3}, 7);
  {
    DispatchModeGuard guard(std::make_shared<testing::CountingMode>(counts));
    functionalize([](const Tensor& t) {
      t.select(0, 0).mul_(num(2.0));
      t.add_(num(1.0));
      t.select(0, 1).add_(t.select(0, 0));
      return t.sum();
    })(x);
  }
  EXPECT_EQ(counts["strata::mul_.Tensor"], 0);
  EXPECT_EQ(counts["strata::add_.Tensor"], 0);
  EXPECT_GE(counts["strata::copy_"], 1);  // the write-back (clones copy too)
}

// Note [Writing the root's memory]: a write through a view of a tensor made
// inside f goes into the root's memory when nothing else can read it; the
// caller's input, or anything run under a watching mode, is written out of place.
TEST(Functionalize, WritesIntoTheRootsMemoryOnlyWhenNoOneElseCanReadIt) {
  using functionalization::as_functional;
  // The memory under the root of t, a tensor of a functionalize level (none in eager code).
  const auto root_memory = [](const Tensor& t) -> const void* {
    const auto* w = as_functional(t);
    return w != nullptr ? w->base()->value.data_ptr() : nullptr;
  };
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    SCOPED_TRACE(remove == Remove::Mutations ? "Mutations" : "MutationsAndViews");
    std::vector<bool> kept;  // whether each write left the root's memory where it was
    auto f = [&](const Tensor& x) {
      Tensor y = x.clone();
      const Tensor row = y.select(0, 1);
      const void* before = root_memory(y);
      y.narrow(0, 0, 2).mul_(num(3.0));
      kept.push_back(root_memory(y) == before);
      const void* input = root_memory(x);
      x.select(0, 0).add_(num(1.0));
      kept.push_back(root_memory(x) == input);
      return y + row;
    };
    Tensor x = sample({3, 2}, 30);
    Tensor eager_x = x.clone();
    const Tensor expected = f(eager_x);
    kept.clear();
    expect_same(functionalize(f, remove)(x), expected);
    expect_same(x, eager_x);
    EXPECT_EQ(kept, (std::vector<bool>{true, false}));
    std::map<std::string, int> counts;
    {
      DispatchModeGuard guard(std::make_shared<testing::CountingMode>(counts));
      kept.clear();
      functionalize(f, remove)(sample({3, 2}, 30));
    }
    EXPECT_EQ(kept, (std::vector<bool>{false, false}));
    EXPECT_EQ(counts["strata::mul_.Tensor"], 0);
  }
}

// Where the old value of a written base is still read (a view taken before the
// write, a value computed from it, a tensor a grad level saved), functionalize
// gives eager's values, or, where eager code refuses (grad inside: its saved
// tensor was written), refuses too.
TEST(Functionalize, AWriteThroughAViewKeepsWhatOthersReadRight) {
  const Fn f = [](const Tensor& x) {
    Tensor y = x.clone();
    const Tensor middle = y.narrow(0, 1, 2);  // overlaps the first write
    const Tensor before = y * 1.0;
    y.narrow(0, 0, 2).mul_(num(3.0));
    y.narrow(0, 3, 2).add_(middle);
    return y + before + middle.sum();
  };
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    expect_functionalize_matches(f, sample({5}, 31), remove);
  }
  // y * y saves y before the write: d/dx of sum(y * y) + sum(y written) is 2x + (3, 3, 1, 1).
  const Fn g = [](const Tensor& x) {
    Tensor y = x * 1.0;
    const Tensor square = y * y;
    y.narrow(0, 0, 2).mul_(num(3.0));
    return (square + y).sum();
  };
  const Tensor x = sample({4}, 32);
  const Tensor expected = x * 2.0 + tensor({3.0, 3.0, 1.0, 1.0}, {4});
  expect_same(grad(functionalize(g))(x), expected);
  // With grad inside, its saved y is written, as in eager code: both refuse.
  for (const std::function<void()>& run : std::vector<std::function<void()>>{
           [&] { grad(g)(x); }, [&] { functionalize(grad(g))(x); },
           [&] { functionalize(grad(g), Remove::MutationsAndViews)(x); }}) {
    expect_contains(error_message(run),
                    {"saved for the backward pass", "modified by an in-place op"});
  }
}

TEST(Functionalize, MutationsAndViewsReturnsNoAliasOfTheInput) {
  Tensor x = sample({2, 3}, 3);
  auto f = [](const Tensor& t) { return std::pair{t.select(0, 1), t.transpose(0, 1)}; };
  auto [a, b] = functionalize(f, Remove::MutationsAndViews)(x);
  EXPECT_NE(a.impl()->underlying_storage(), x.impl()->underlying_storage());
  EXPECT_NE(b.impl()->underlying_storage(), x.impl()->underlying_storage());
  expect_same(a, x.select(0, 1));
  expect_same(b, x.transpose(0, 1));
  // Without views removed, a view output shares the input's memory, as in eager code.
  auto [c, d] = functionalize(f)(x);
  EXPECT_EQ(c.impl()->underlying_storage(), x.impl()->underlying_storage());
}

TEST(Functionalize, ComposesWithGradInBothOrders) {
  Tensor x = sample({2, 3}, 11);
  Tensor expected = grad(&writes_through_views)(x);
  expect_same(grad(functionalize(&writes_through_views))(x), expected, 1e-10);
  expect_same(functionalize(grad(&writes_through_views))(x), expected, 1e-10);
  expect_same(functionalize(grad(functionalize(&writes_through_views)),
                            Remove::MutationsAndViews)(x),
              expected, 1e-10);
}

TEST(Functionalize, ComposesWithJvpInBothOrders) {
  Tensor x = sample({2, 3}, 12);
  Tensor t = sample({2, 3}, 13);
  auto [y, ty] = jvp(&writes_through_views, std::tuple{x}, std::tuple{t});
  auto [fy, fty] = jvp(functionalize(&writes_through_views), std::tuple{x}, std::tuple{t});
  expect_same(fy, y, 1e-10);
  expect_same(fty, ty, 1e-10);
  auto tangent_only = [&](const Tensor& p) {
    return jvp(&writes_through_views, std::tuple{p}, std::tuple{t}).second;
  };
  expect_same(functionalize(tangent_only)(x), ty, 1e-10);
}

// As writes_through_views, but the tensor written through a view is made from
// the input, so that under vmap it is batched (see the next test for why).
Tensor writes_through_views_of_batched(const Tensor& x) {
  Tensor y = x.clone();
  Tensor y0 = y.select(0, 0);
  y.select(0, 1).mul_(y0);
  y.mul_(y);
  Tensor z = zeros_like(x.select(0, 0));
  z.narrow(0, 1, 2).copy_(y.select(0, 1).narrow(0, 0, 2));
  return (z * z).sum() + y0.sin().sum();
}

TEST(Functionalize, ComposesWithVmapInBothOrders) {
  Tensor xs = sample({4, 2, 3}, 14);
  std::vector<Tensor> rows;
  for (int64_t b = 0; b < 4; ++b) rows.push_back(writes_through_views_of_batched(xs.select(0, b)));
  Tensor expected = stack(rows, 0);
  expect_same(vmap(functionalize(&writes_through_views_of_batched))(xs), expected, 1e-10);
  expect_same(functionalize(vmap(&writes_through_views_of_batched))(xs), expected, 1e-10);
  expect_same(vmap(grad(functionalize(&writes_through_views_of_batched)))(xs),
              vmap(grad(&writes_through_views_of_batched))(xs), 1e-10);
}

// Two functionalize levels around or inside vmap: each is entered directly
// (Note [Layers entered directly]), and vmap on top of them must still see its
// batched tensors.
TEST(Functionalize, NestedLevelsComposeWithVmap) {
  Tensor xs = sample({4, 2, 3}, 15);
  std::vector<Tensor> rows;
  for (int64_t b = 0; b < 4; ++b) rows.push_back(writes_through_views_of_batched(xs.select(0, b)));
  Tensor expected = stack(rows, 0);
  const auto f = &writes_through_views_of_batched;
  expect_same(functionalize(functionalize(vmap(f)))(xs), expected, 1e-10);
  expect_same(vmap(functionalize(functionalize(f)))(xs), expected, 1e-10);
  expect_same(functionalize(vmap(functionalize(f)))(xs), expected, 1e-10);
}

// A batched value written through views of an unbatched tensor made inside f:
// the write is a select/slice/diagonal_scatter, whose batching rule makes the
// base batched, as PyTorch's functionalize does. Checked against a loop.
Tensor writes_batched_through_views_of_unbatched(const Tensor& y) {
  Tensor x = zeros({3, 4}, kFloat64);
  x.select(0, 0).copy_(y);
  x.narrow(1, 1, 2).select(0, 1).add_(y.narrow(0, 0, 2));
  x.diagonal(1).mul_(y.narrow(0, 1, 3));
  x.t().select(0, 3).sub_(y.select(0, 2));
  return x;
}

TEST(Functionalize, VmapWritesABatchedValueThroughViewsOfAnUnbatchedTensor) {
  Tensor ys = sample({5, 4}, 21);
  std::vector<Tensor> rows;
  for (int64_t b = 0; b < 5; ++b) {
    rows.push_back(writes_batched_through_views_of_unbatched(ys.select(0, b)));
  }
  const Tensor expected = stack(rows, 0);
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    expect_same(vmap(functionalize(&writes_batched_through_views_of_unbatched, remove))(ys),
                expected);
    // The batch dim last.
    expect_same(vmap(functionalize(&writes_batched_through_views_of_unbatched, remove),
                     {.in_dims = {1}})(ys.t().contiguous()),
                expected);
  }
  // Plain vmap cannot: one unbatched tensor cannot hold a value per sample.
  EXPECT_THROW(vmap(&writes_batched_through_views_of_unbatched)(ys), Error);
  auto loss = [](const Tensor& y) { return writes_batched_through_views_of_unbatched(y).pow(2).sum(); };
  std::vector<Tensor> grads;
  for (int64_t b = 0; b < 5; ++b) grads.push_back(grad(loss)(ys.select(0, b)));
  expect_same(vmap(grad(functionalize(loss)))(ys), stack(grads, 0), 1e-10);
}

// The whole of writes_through_views (a zeros tensor written through a narrow
// view with a batched value) under vmap(functionalize): as a loop.
TEST(Functionalize, VmapOfWritesThroughViewsMatchesALoop) {
  Tensor xs = sample({4, 2, 3}, 22);
  std::vector<Tensor> rows;
  for (int64_t b = 0; b < 4; ++b) rows.push_back(writes_through_views(xs.select(0, b)));
  expect_same(vmap(functionalize(&writes_through_views))(xs), stack(rows, 0), 1e-10);
}

// A tensor captured from outside functionalize is not the level's: a batched
// write through its view is a write into an unbatched tensor, which vmap refuses
// (PyTorch too), naming the op; the captured tensor is left as it was.
TEST(Functionalize, VmapBatchedWriteThroughAViewOfACapturedTensorIsRefused) {
  const Tensor x = zeros({2, 4}, kFloat64);
  auto f = [&](const Tensor& y) {
    x.select(0, 0).copy_(y);
    return x * 2.0;
  };
  Tensor ys = sample({3, 4}, 23);
  expect_contains(error_message([&] { vmap(functionalize(f))(ys); }), {"strata::copy_"});
  expect_same(x, zeros({2, 4}, kFloat64));
  // Without vmap the write reaches the captured tensor, as in eager code.
  const Tensor y = ys.select(0, 1);
  const Tensor out = functionalize(f)(y);
  expect_same(x.select(0, 0), y);
  expect_same(x.select(0, 1), zeros({4}, kFloat64));
  expect_same(out.select(0, 0), y * 2.0);
  // An unbatched input of functionalize written through a view with a batched
  // value cannot be written back into the caller's unbatched tensor either.
  auto g = [](const Tensor& base, const Tensor& y) {
    base.select(0, 0).copy_(y);
    return base.sum();
  };
  Tensor base = zeros({2, 4}, kFloat64);
  const std::string message =
      error_message([&] { vmap(functionalize(g), {.in_dims = {std::nullopt, 0}})(base, ys); });
  EXPECT_FALSE(message.empty());
  expect_same(base, zeros({2, 4}, kFloat64));
}

// Plain vmap cannot write a batched value into an unbatched tensor;
// functionalize makes the write out of place, so vmap(functionalize(f)) can.
TEST(Functionalize, VmapWritesABatchedValueIntoAnUnbatchedTensor) {
  auto f = [](const Tensor& x) {
    Tensor t = zeros({4}, kFloat64);
    t.add_(x);
    t.mul_(x);
    return t;
  };
  Tensor xs = sample({3, 4}, 15);
  expect_same(vmap(functionalize(f))(xs), xs * xs);
  EXPECT_THROW(vmap(f)(xs), Error);
}

TEST(Functionalize, MutatedInputIsWrittenBackUnderAnOuterVmap) {
  auto f = [](const Tensor& x) {
    x.narrow(0, 0, 2).mul_(num(3.0));
    return x.sum();
  };
  Tensor xs = sample({3, 4}, 16);
  Tensor eager_xs = xs.clone();
  Tensor sums = vmap(functionalize(f))(xs);
  Tensor eager_sums = vmap(f)(eager_xs);
  expect_same(sums, eager_sums);
  expect_same(xs, eager_xs);
}

TEST(Functionalize, RefusesAWriteIntoAnExpandedInput) {
  // pytorch#153861: a stride-0 input written under mutations_and_views.
  Tensor base = sample({3}, 17);
  Tensor expanded = base.expand({2, 3});
  auto f = [](const Tensor& x) {
    x.add_(num(1.0));
    return x * 2.0;
  };
  expect_contains(error_message([&] { functionalize(f, Remove::MutationsAndViews)(expanded); }),
                  {"strata::add_", "share memory", "functionalize(level"});
  expect_same(base, base.clone());
}

TEST(Functionalize, RefusesAWriteThroughAnExpandOrOverlappingAsStridedView) {
  Tensor x = sample({3}, 18);
  auto through_expand = [](const Tensor& t) {
    Tensor y = t.clone();
    y.expand({2, 3}).mul_(num(2.0));
    return y;
  };
  expect_contains(error_message([&] { functionalize(through_expand)(x); }),
                  {"strata::mul_", "share memory"});
  auto through_as_strided = [](const Tensor& t) {
    Tensor y = t.clone();
    y.as_strided({2, 2}, {1, 1}).add_(num(1.0));
    return y;
  };
  expect_contains(error_message([&] { functionalize(through_as_strided)(x); }),
                  {"strata::add_", "share memory"});
}

TEST(Functionalize, RefusesWritingAnInputThatAliasesAnother) {
  Tensor x = sample({4}, 19);
  Tensor head = x.narrow(0, 0, 2);
  auto f = [](const Tensor& a, const Tensor& b) {
    a.add_(num(1.0));
    return a + b.sum();
  };
  expect_contains(error_message([&] { functionalize(f)(x, head); }),
                  {"functionalize", "shares memory with another input"});
}

TEST(Functionalize, FunctionalizeOfFunctionalize) {
  auto f = [](const Tensor& x) {
    x.select(0, 0).add_(x.select(0, 1));
    return x * x;
  };
  Tensor x = sample({2, 2}, 20);
  Tensor eager_x = x.clone();
  Tensor expected = f(eager_x);
  expect_same(functionalize(functionalize(f), Remove::MutationsAndViews)(x), expected);
  expect_same(x, eager_x);
}

}  // namespace
}  // namespace strata
