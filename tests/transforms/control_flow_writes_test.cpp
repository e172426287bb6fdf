// A control-flow function that writes one of its inputs in place (Note
// [Control-flow functions do not write their inputs]): refused in every mode
// with an error naming the operator, the function and the input, except under
// functionalize, where the write becomes a new value and the result equals the
// same computation written as a plain C++ if or loop, the write included. A
// write to a captured tensor is C++'s own write unless a per-lane predicate
// runs the function on every lane; then it is refused too.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <functional>
#include <string>

#include "tests/test_support.h"

namespace st = strata;

namespace {

using st::testing::allclose;
using st::testing::error_message;
using st::testing::expect_contains;
using ControlFlowWrites = st::testing::TransformStateRestored;
using Fn = std::function<st::Tensor(const st::Tensor&)>;

st::Tensor num(double v) { return st::full({}, v, st::kFloat64); }

struct Writer {
  Fn f;    // with the operator; its function writes an input
  Fn ref;  // the plain C++ if or loop, writing the same input
  std::vector<const char*> names;  // what the error names
};

std::vector<Writer> writers() {
  Writer cond{[](const st::Tensor& v) {
                return st::cond(v.sum() > 0.0, [](const st::Tensor& a) { return st::Tensor(a.mul_(num(2.0))) + 1.0; },
                                [](const st::Tensor& a) { return a + 1.0; }, v);
              },
              [](const st::Tensor& v) {
                if (v.sum().item<double>() > 0) v.mul_(num(2.0));
                return v + 1.0;
              },
              {"strata::cond", "true_fn", "writes its argument operand leaf 0", "in place"}};
  Writer loop{[](const st::Tensor& v) {
                return st::while_loop([](const st::Tensor& c) { return c.sum() < 5.0; },
                                      [](const st::Tensor& c) { return st::Tensor(c.mul_(num(2.0))) + 0.5; }, v);
              },
              [](const st::Tensor& v) {
                st::Tensor c = v;
                while (c.sum().item<double>() < 5.0) c = st::Tensor(c.mul_(num(2.0))) + 0.5;
                return c;
              },
              {"strata::while_loop", "body_fn", "writes its argument carry leaf 0"}};
  Writer scan{[](const st::Tensor& v) {
                auto step = [](const st::Tensor& h, const st::Tensor& e) {
                  return std::pair{h + st::Tensor(e.mul_(num(3.0))), h};
                };
                return st::scan(step, st::zeros({}, st::kFloat64), v).second;
              },
              [](const st::Tensor& v) {
                st::Tensor h = st::zeros({}, st::kFloat64);
                std::vector<st::Tensor> ys;
                for (int64_t t = 0; t < v.size(0); ++t) {
                  ys.push_back(h);
                  h = h + st::Tensor(v.select(0, t).mul_(num(3.0)));
                }
                return st::stack(ys, 0);
              },
              {"strata::scan", "step", "writes its argument xs leaf 0"}};
  Writer map{[](const st::Tensor& v) {
               return st::map([](const st::Tensor& a) { return st::Tensor(a.add_(num(1.0))) * a; }, v);
             },
             [](const st::Tensor& v) {
               std::vector<st::Tensor> ys;
               for (int64_t t = 0; t < v.size(0); ++t) {
                 const st::Tensor a = v.select(0, t);
                 ys.push_back(st::Tensor(a.add_(num(1.0))) * a);
               }
               return st::stack(ys, 0);
             },
             {"strata::map", "f", "writes its argument xs leaf 0"}};
  return {cond, loop, scan, map};
}

void expect_refused(const std::function<void()>& call, const Writer& w, const char* mode) {
  const std::string message = error_message(call);
  SCOPED_TRACE(mode);
  for (const char* part : w.names) EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
}

TEST_F(ControlFlowWrites, RefusedEagerAndUnderGradJvpAndVmap) {
  const st::Tensor x = st::tensor({0.5, 1.0, 0.25}, {3});
  const st::Tensor xs = st::tensor({0.5, 1.0, 0.25, 0.3, -2.0, 0.2}, {2, 3});
  for (const Writer& w : writers()) {
    SCOPED_TRACE(w.names.front());
    const st::Tensor input = x.clone();
    expect_refused([&] { w.f(input); }, w, "eager");
    expect_refused([&] { st::grad([&](const st::Tensor& v) { return w.f(v * 1.0).sum(); })(x); }, w, "grad");
    expect_refused([&] { st::jvp(w.f, std::tuple{x.clone()}, std::tuple{st::ones({3}, st::kFloat64)}); }, w,
                   "jvp");
    // Under vmap: cond's predicate and while_loop's differ per lane (the
    // functions run on masked copies), scan's and map's steps are batched.
    expect_refused([&] { st::vmap(w.f)(xs.clone()); }, w, "vmap");
    expect_refused([&] { st::vmap(st::grad([&](const st::Tensor& v) { return w.f(v * 1.0).sum(); }))(xs); }, w,
                   "vmap(grad)");
  }
}

TEST_F(ControlFlowWrites, RefusedUnderVmapWithAPredicateTheSameForEveryLane) {
  const st::Tensor xs = st::tensor({0.5, 1.0, 0.25, 0.3, -2.0, 0.2}, {2, 3});
  const st::Tensor flag = st::tensor({1.0}, {}) > 0.0;
  auto writes = [&](const st::Tensor& v) {
    return st::cond(flag, [](const st::Tensor& a) { return st::Tensor(a.sub_(num(1.0))) * 2.0; },
                    [](const st::Tensor& a) { return a; }, v);
  };
  expect_contains(error_message([&] { st::vmap(writes)(xs.clone()); }),
                  {"strata::cond", "true_fn", "operand leaf 0"});
  auto cond_writes = [](const st::Tensor& v) {
    return st::while_loop([](const st::Tensor& c) { return st::Tensor(c.mul_(num(1.0))).sum() < 5.0; },
                          [](const st::Tensor& c) { return c * 2.0; }, v);
  };
  expect_contains(error_message([&] { cond_writes(st::tensor({1.0}, {1})); }),
                  {"strata::while_loop", "cond_fn", "carry leaf 0"});
}

TEST_F(ControlFlowWrites, TraceRefusesEveryOperator) {
  for (const Writer& w : writers()) {
    expect_contains(error_message([&] { st::trace(w.f)(st::tensor({0.5, 1.0, 0.25}, {3})); }),
                    {w.names.front(), "writes", "in place"});
  }
}

TEST_F(ControlFlowWrites, FunctionalizeEqualsTheCppLoopWriteIncluded) {
  for (const Writer& w : writers()) {
    SCOPED_TRACE(w.names.front());
    for (const st::Tensor& x : {st::tensor({0.5, 1.0, 0.25}, {3}), st::tensor({-0.5, 1.0, -0.75}, {3})}) {
      const st::Tensor input = x.clone();
      const st::Tensor out = st::functionalize(w.f)(input);
      const st::Tensor ref_input = x.clone();
      const st::Tensor expected = w.ref(ref_input);
      EXPECT_TRUE(allclose(out, expected));
      EXPECT_TRUE(allclose(input, ref_input)) << "the write reaches the input, as in the loop";
      if (x.sum().item<double>() > 0) {
        EXPECT_FALSE(allclose(ref_input, x)) << "the loop writes its input";
      }
    }
    // Per sample: each lane's write reaches its row. Where the predicate
    // differs per lane (cond, while_loop) each lane's function runs on a masked
    // copy, which the write could not reach back through: refused.
    const st::Tensor xs = st::tensor({0.5, 1.0, 0.25, 0.3, -2.0, 0.2}, {2, 3});
    const st::Tensor rows = xs.clone();
    const std::string name = w.names.front();
    if (name == "strata::cond" || name == "strata::while_loop") {
      expect_refused([&] { st::vmap(st::functionalize(w.f))(rows); }, w, "vmap(functionalize)");
      continue;
    }
    const st::Tensor out = st::vmap(st::functionalize(w.f))(rows);
    for (int64_t b = 0; b < 2; ++b) {
      const st::Tensor row = xs.select(0, b).clone();
      EXPECT_TRUE(allclose(out.select(0, b), w.ref(row))) << b;
      EXPECT_TRUE(allclose(rows.select(0, b), row)) << b;
    }
  }
}

TEST_F(ControlFlowWrites, ACapturedTensorIsWrittenAsCppWouldUnlessLanesDiffer) {
  const st::Tensor xs = st::tensor({0.5, -1.0, 0.25, 2.0}, {4});
  auto counting = [](const st::Tensor& acc) {
    return [acc](const st::Tensor& v) {
      return st::cond(v > 0.0, [&](const st::Tensor& a) { acc.add_(num(1.0)); return a * 2.0; },
                      [](const st::Tensor& a) { return a; }, v);
    };
  };
  // One lane at a time the write is the program's own, as under a C++ if.
  const st::Tensor acc = st::zeros({}, st::kFloat64);
  for (int64_t b = 0; b < 4; ++b) counting(acc)(xs.select(0, b));
  EXPECT_EQ(acc.item<double>(), 3.0);
  // With a per-lane predicate every lane would run the write: refused.
  const st::Tensor batched_acc = st::zeros({}, st::kFloat64);
  expect_contains(error_message([&] { st::vmap(counting(batched_acc))(xs); }),
                  {"strata::cond", "true_fn", "writes a tensor it captures", "add_", "per-lane predicate"});
  EXPECT_EQ(batched_acc.item<double>(), 0.0);
  // A view of the captured tensor is the captured tensor's memory.
  const st::Tensor buffer = st::zeros({2}, st::kFloat64);
  auto through_view = [&](const st::Tensor& v) {
    return st::cond(v > 0.0, [&](const st::Tensor& a) { buffer.select(0, 0).add_(num(1.0)); return a; },
                    [](const st::Tensor& a) { return a; }, v);
  };
  expect_contains(error_message([&] { st::vmap(through_view)(xs); }), {"writes a tensor it captures"});
  // Under functionalize the write never reaches memory, and is refused all the same.
  auto made_outside_the_branch = [](const st::Tensor& v) {
    const st::Tensor acc = v * 0.0;
    const st::Tensor out = st::cond(v > 0.0, [&](const st::Tensor& a) { acc.add_(a); return a * 2.0; },
                                    [](const st::Tensor& a) { return a + 1.0; }, v);
    return out + acc;
  };
  expect_contains(error_message([&] { st::vmap(st::functionalize(made_outside_the_branch))(xs); }),
                  {"strata::cond", "true_fn", "writes a tensor it captures", "functionalize"});
  const st::Tensor one = st::functionalize(made_outside_the_branch)(xs.select(0, 0));
  EXPECT_NEAR(one.item<double>(), 0.5 * 2.0 + 0.5, 1e-12);  // one lane: the C++ if's write
}

}  // namespace
