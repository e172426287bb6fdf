// Profiler: the level each call ran at, loop-fallback hits, FLOPs per level, JSON;
// FlopCounter::by_level and eager-vs-replay counts. Expected counts are worked out
// by hand from the ops each function issues and the row formulas (one FLOP per
// output element for elementwise ops, one per input element for sum).
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace strata {
namespace {

using Row = Profiler::Row;

// An op with only a CPU kernel: under vmap it takes the loop fallback.
STRATA_LIBRARY(profiler_test, m) { m.def("triple(Tensor self) -> Tensor"); }
STRATA_LIBRARY_IMPL(profiler_test, CPU, m) {
  m.impl("triple", [](const Tensor& self) { return self * 3.0; });
}
Tensor triple(const Tensor& x) {
  return Dispatcher::singleton()
      .findSchemaOrThrow("profiler_test::triple", "")
      .typed<Tensor(const Tensor&)>()
      .call(x);
}

template <class Mode, class F>
std::shared_ptr<Mode> under(F&& f) {
  auto mode = std::make_shared<Mode>();
  const DispatchModeGuard guard(mode);
  f();
  return mode;
}

// The row of `op` at `level`; a default row (no calls) when there is none.
Row row(const Profiler& p, const std::string& op, const std::string& level) {
  for (const Row& r : p.rows()) {
    if (r.op == op && r.level == level) return r;
  }
  return Row{};
}

std::map<std::string, Profiler::Level> levels(const Profiler& p) {
  std::map<std::string, Profiler::Level> out;
  for (const Profiler::Level& l : p.levels()) out[l.level] = l;
  return out;
}

constexpr int64_t kB = 2, kN = 3;
const Tensor kW = tensor({0.5, -1.0, 2.0});
const Tensor kXs = tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}).reshape({kB, kN});
// Three ops per sample: sin, mul, sum (3N FLOPs). Its gradient w cos(x) takes
// the mul by w and sin_backward's cos and mul (3N FLOPs).
Tensor f(const Tensor& x) { return (x.sin() * kW).sum(); }

TEST(Profiler, VmapOfGradShowsEachUserOpAtTheInnermostLevelAndTheWorkPerLevel) {
  auto p = under<Profiler>([] { vmap(grad(f))(kXs); });
  for (const char* op : {"strata::sin", "strata::mul.Tensor", "strata::sum"}) {
    const Row r = row(*p, op, "vmap/grad");
    EXPECT_EQ(r.calls, 1) << op;
    EXPECT_EQ(r.depth, 2u) << op;
    EXPECT_EQ(r.flops, 0) << op << ": a call on transform tensors runs below, counted there";
  }
  // What executes runs outside every transform, on the whole batch at once.
  EXPECT_EQ(row(*p, "strata::sin", "none").flops, kB * kN);
  EXPECT_EQ(row(*p, "strata::cos", "none").flops, kB * kN);
  EXPECT_EQ(row(*p, "strata::mul.Tensor", "none").flops, 3 * kB * kN);
  EXPECT_EQ(row(*p, "strata::sin", "none").calls, 1);
  // The backward pass runs after grad's layer has ended: at vmap, not vmap/grad.
  EXPECT_EQ(row(*p, "strata::sin_backward", "vmap/grad").calls, 0);
  EXPECT_EQ(row(*p, "strata::sin_backward", "vmap").calls, 1);

  const auto by_level = levels(*p);
  ASSERT_EQ(by_level.count("vmap/grad"), 1u);
  EXPECT_EQ(by_level.at("vmap/grad").root_calls, 3);  // sin, mul, sum: f's own calls
  EXPECT_EQ(by_level.at("vmap/grad").flops, 3 * kB * kN);
  ASSERT_EQ(by_level.count("vmap"), 1u);
  EXPECT_EQ(by_level.at("vmap").flops, 3 * kB * kN);
  EXPECT_EQ(p->total_flops(), 6 * kB * kN);
  EXPECT_EQ(p->loop_fallback_calls(), 0);

  // Self times partition the root calls' time.
  int64_t self = 0, root = 0;
  for (const Row& r : p->rows()) {
    EXPECT_GE(r.self_ns, 0) << r.op;
    EXPECT_LE(r.self_ns, r.time_ns) << r.op;
    self += r.self_ns;
  }
  for (const auto& [name, l] : by_level) root += l.time_ns;
  EXPECT_EQ(self, root);
}

TEST(Profiler, FlagsEveryLoopFallbackHitAtTheLevelThatLooped) {
  auto p = under<Profiler>([] { vmap(vmap([](const Tensor& x) { return triple(x.sin()); }))(kXs); });
  // The inner vmap loops once over its 3 samples; each is still batched at the
  // outer level, which loops over its 2 samples: 3 + 1 hits, 6 kernel calls.
  EXPECT_EQ(row(*p, "profiler_test::triple", "vmap/vmap").loop_fallback_calls, 1);
  EXPECT_EQ(row(*p, "profiler_test::triple", "vmap").loop_fallback_calls, 3);
  EXPECT_EQ(row(*p, "profiler_test::triple", "vmap").calls, 3);
  EXPECT_EQ(row(*p, "profiler_test::triple", "none").calls, 6);
  EXPECT_EQ(row(*p, "profiler_test::triple", "none").loop_fallback_calls, 0);
  EXPECT_EQ(row(*p, "strata::sin", "vmap/vmap").loop_fallback_calls, 0);
  EXPECT_EQ(row(*p, "strata::sin", "none").calls, 1);  // sin has a rule: one call
  EXPECT_EQ(p->loop_fallback_calls(), 4);
  // The kernel's own mul by 3, once per sample.
  EXPECT_EQ(row(*p, "strata::mul.Scalar", "none").flops + row(*p, "strata::mul.Tensor", "none").flops,
            kB * kN);
}

TEST(Profiler, JsonHasEveryRowAndField) {
  auto p = under<Profiler>([] { vmap(grad(f))(kXs); });
  const std::string json = p->to_json();
  size_t ops = 0;
  for (size_t at = json.find("{\"op\": "); at != std::string::npos; at = json.find("{\"op\": ", at + 1))
    ++ops;
  EXPECT_EQ(ops, p->rows().size());
  testing::expect_contains(json, {"\"total_ns\": ", "\"total_flops\": 36", "\"loop_fallback_calls\": 0",
                                  "\"ops\": [", "\"levels\": [", "\"level\": \"vmap/grad\"",
                                  "\"depth\": 2", "\"self_ns\": ", "\"root_calls\": 3"});
  const std::string table = p->to_string();
  testing::expect_contains(table, {"op", "level", "self us", "loop fb", "strata::sin", "vmap/grad"});
  p->reset();
  EXPECT_TRUE(p->rows().empty());
  EXPECT_EQ(p->total_flops(), 0);
}

TEST(FlopCounterLevels, VmapOfGradSplitsForwardAndBackward) {
  auto flops = under<FlopCounter>([] { vmap(grad(f))(kXs); });
  const std::map<std::string, int64_t> expected{{"vmap/grad", 3 * kB * kN}, {"vmap", 3 * kB * kN}};
  EXPECT_EQ(flops->by_level(), expected);
  EXPECT_EQ(flops->total(), 6 * kB * kN);
  // sin_backward is written as grad * cos(self): counted once, on those two ops.
  EXPECT_EQ(flops->by_op().at("strata::sin_backward"), 0);
  EXPECT_EQ(flops->by_op().at("strata::cos"), kB * kN);
}

TEST(FlopCounterLevels, EagerWorkIsAtNoneAndGradOfGradHasThreeLevels) {
  auto eager = under<FlopCounter>([] { f(kXs.select(0, 0)); });
  EXPECT_EQ(eager->by_level(), (std::map<std::string, int64_t>{{"none", 3 * kN}}));
  // g(x) = sum(x * w * w): the grad is w * w, constant, so its own grad's backward
  // has nothing to do past the first level's products.
  auto twice = under<FlopCounter>([] {
    grad([](const Tensor& x) { return grad([](const Tensor& y) { return (y * kW).sum(); })(x).sum(); })(
        kXs.select(0, 0));
  });
  const auto split = twice->by_level();
  EXPECT_EQ(split.at("grad/grad"), 2 * kN);  // mul, sum
  // The inner backward (w times the expanded ones) and the outer function's sum.
  EXPECT_EQ(split.at("grad"), 2 * kN);
  EXPECT_EQ(twice->total(), 4 * kN);
}

TEST(FlopCounterReplay, TracedGraphReplayCountsWhatTheEagerCallCounts) {
  auto per_sample = [](const Tensor& xs) { return vmap(grad(f))(xs); };
  auto eager = under<FlopCounter>([&] { per_sample(kXs); });
  const Graph g = trace(per_sample)(kXs);
  const Tensor other = kXs * 2.0;
  auto replay = under<FlopCounter>([&] { g(other); });
  EXPECT_EQ(replay->total(), eager->total());
  EXPECT_EQ(replay->total(), 6 * kB * kN);
  // The graph holds the executed ops, replayed outside every transform.
  EXPECT_EQ(replay->by_level(), (std::map<std::string, int64_t>{{"none", 6 * kB * kN}}));
  const auto eager_ops = eager->by_op();
  for (const auto& [op, n] : replay->by_op()) {
    EXPECT_EQ(eager_ops.count(op) ? eager_ops.at(op) : 0, n) << op;
  }
}

}  // namespace
}  // namespace strata
