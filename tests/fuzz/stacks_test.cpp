// The differential fuzzer's stacks (stacks.cpp) pass on random programs, and each
// fails once a bug is planted: a wrong kernel registered over a real one at the
// key the stack exercises (or, for the custom function, a wrong vjp rule).
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <numbers>
#include <set>
#include <thread>

#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "kernels/cpu/parallel.h"
#include "tests/fuzz/checks.h"

namespace strata::fuzz {
namespace {

constexpr const char* kFunctionalize = "functionalize (both modes) vs eager, and under grad";
constexpr const char* kTrace = "trace + replay on new inputs vs eager (plain, vmap, grad)";
constexpr const char* kCond = "vmap(cond) per-sample predicate, and vmap(grad(cond)), vs loop";
constexpr const char* kCustom = "custom_function (vjp rule) under grad, jvp, vmap vs plain";
constexpr const char* kDtypes = "float32 vs float64 (values, grad)";
constexpr const char* kThreads = "vmap and vmap(grad) on 2 threads vs 1 (bitwise)";
constexpr const char* kVjp = "vjp (both inputs, broadcast) vs float64 finite differences";
constexpr const char* kJvp = "jvp (both inputs) vs float64 finite differences";
constexpr const char* kTbb = "eager and vmap with TBB on 1 thread vs 2";
constexpr const char* kVmap = "vmap (random in_dims, chunk_size 0/1/2) vs loop";
constexpr const char* kNested = "random transform stack (depth 1-4) vs reference stack";
constexpr const char* kErrors =
    "bad program raises a strata::Error naming the op, eagerly and under a random stack";

bool is_failure(const std::string& result) {
  return !result.empty() && result.rfind(kUnsupported, 0) != 0;
}

// A failure (not an unsupported case) whose report starts with `what`.
void expect_caught(const std::string& result, const char* what) {
  EXPECT_TRUE(is_failure(result)) << result;
  EXPECT_EQ(result.rfind(what, 0), 0u) << result;
}

// Failures of `check` over random programs (seeds 1..n).
int failures(const char* check, int n) {
  int failed = 0;
  for (int seed = 1; seed <= n; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    const Program p = random_program(rng);
    std::mt19937_64 check_rng(rng());
    const std::string result = find_check(check).run(p, check_rng);
    EXPECT_FALSE(is_failure(result)) << "seed " << seed << ": " << result << "\n" << to_cpp(p);
    failed += is_failure(result);
  }
  return failed;
}

// The result of `check` on f(x, y) = op(x, y) then sin, on [2, 3] inputs.
std::string run_on(const char* check, OpKind op) {
  const Program p{.shape = {2, 3}, .y_shape = {2, 3}, .code = {{op, 0, 1}, {OpKind::Sin, 2, 2}}};
  std::mt19937_64 rng(7);
  return find_check(check).run(p, rng);
}

// A boxed kernel replacing one operator's kernel at `key` while the test runs.
template <class F>
Library plant(const char* op, DispatchKey key, F kernel) {
  Library lib(Library::Kind::Impl, "strata", key, __FILE__, __LINE__);
  lib.impl(op, key,
           KernelFunction::from_boxed_functor(
               [kernel](const OperatorHandle&, DispatchKeySet keys, Stack& stack) { kernel(keys, stack); }));
  return lib;
}

// sin computed another way (cos(x - pi/2)), plus `error(x)`.
template <class E>
Library plant_sin(E error) {
  return plant("sin", DispatchKey::CPU, [error](DispatchKeySet, Stack& stack) {
    const Tensor x = stack.back().to_tensor();
    stack.back() = (x - std::numbers::pi / 2).cos() + error(x);
  });
}

TEST(FuzzStacks, PassOnRandomPrograms) {
  for (const char* check : {kFunctionalize, kTrace, kCond, kCustom, kDtypes, kThreads, kTbb, kVjp, kJvp, kNested,
                            kErrors}) {
    EXPECT_EQ(failures(check, 40), 0) << check;
  }
}

TEST(FuzzStacks, FunctionalizeCatchesAWrongFunctionalVariant) {
  EXPECT_EQ(run_on(kFunctionalize, OpKind::AddInPlace), "");
  // add.Tensor, which functionalize runs for add_ when a layer is below it,
  // subtracts: eager (add_ only) is unaffected, and so is functionalize alone
  // (it writes in place, Note [Writing the root's memory]); grad(functionalize)
  // goes wrong.
  const Library lib = plant("add.Tensor", DispatchKey::CPU, [](DispatchKeySet, Stack& stack) {
    stack.pop_back();  // alpha
    const Tensor b = stack.back().to_tensor();
    stack.pop_back();
    stack.back() = stack.back().to_tensor() - b;
  });
  expect_caught(run_on(kFunctionalize, OpKind::AddInPlace), "grad(functionalize) vs grad");
}

TEST(FuzzStacks, TraceCatchesAnOpTheRecorderMissed) {
  EXPECT_EQ(run_on(kTrace, OpKind::Mul), "");
  // sin while tracing skips the recorder: its output is kept as a constant.
  const Library lib = plant("sin", DispatchKey::Mode, [](DispatchKeySet keys, Stack& stack) {
    Dispatcher::singleton().findSchemaOrThrow("strata::sin", "").redispatch_boxed(
        keys & DispatchKeySet::below(DispatchKey::Mode), stack);
  });
  expect_caught(run_on(kTrace, OpKind::Mul), "trace replay vs eager: not bitwise equal");
}

TEST(FuzzStacks, CondCatchesSwappedLanes) {
  EXPECT_EQ(run_on(kCond, OpKind::Mul), "");
  // where() keeps the other branch's lane: cond under vmap picks the wrong results.
  const Library lib = plant("where.self", DispatchKey::CPU, [](DispatchKeySet, Stack& stack) {
    const Tensor b = stack.back().to_tensor();
    stack.pop_back();
    const Tensor a = stack.back().to_tensor();
    stack.pop_back();
    const Tensor c = stack.back().to_tensor().to(a.dtype());
    stack.back() = a + c * (b - a);
  });
  expect_caught(run_on(kCond, OpKind::Mul), "vmap(cond) vs loop: max difference");
}

TEST(FuzzStacks, CustomFunctionCatchesAWrongRule) {
  EXPECT_EQ(run_on(kCustom, OpKind::Mul), "");
  planted_bugs().wrong_custom_vjp = true;
  const std::string result = run_on(kCustom, OpKind::Mul);
  planted_bugs().wrong_custom_vjp = false;
  expect_caught(result, "grad(custom_function) vs grad: max difference");
}

TEST(FuzzStacks, Float32CatchesAKernelWrongInFloat32Only) {
  {
    const Library exact = plant_sin([](const Tensor&) { return 0.0; });
    EXPECT_EQ(run_on(kDtypes, OpKind::Mul), "");
  }
  const Library lib = plant_sin([](const Tensor& x) { return x.dtype() == kFloat32 ? 1e-2 : 0.0; });
  expect_caught(run_on(kDtypes, OpKind::Mul), "float32 vs float64: max difference");
}

TEST(FuzzStacks, ThreadsCatchAKernelThatDependsOnTheThread) {
  EXPECT_EQ(run_on(kThreads, OpKind::Mul), "");
  const std::thread::id main = std::this_thread::get_id();
  const Library lib = plant_sin([main](const Tensor&) { return std::this_thread::get_id() == main ? 0.0 : 1e-15; });
  expect_caught(run_on(kThreads, OpKind::Mul), "2 threads vs 1: not bitwise equal");
}

TEST(FuzzStacks, TbbThreadsCatchAKernelThatDependsOnTheThreadCount) {
  EXPECT_EQ(run_on(kTbb, OpKind::Mul), "");
  // mul and sin: compared bitwise.
  const Library lib = plant_sin([](const Tensor&) { return cpu::num_threads() == 1 ? 0.0 : 1e-13; });
  expect_caught(run_on(kTbb, OpKind::Mul), "1 vs 2 TBB threads (vmap): not bitwise equal");
}

// The generator draws float32, int64 and bool programs, and every check runs
// clean on 40 of them (the derivative checks skip the integer ones).
TEST(FuzzStacks, PassOnProgramsOfOtherDtypes) {
  std::set<ScalarType> drawn;
  int tested = 0;
  for (uint64_t seed = 1; tested < 40; ++seed) {
    std::mt19937_64 rng(seed);
    const Program p = random_program(rng);
    drawn.insert(p.dtype);
    if (p.dtype == kFloat64) continue;
    ++tested;
    for (const Check& check : all_checks()) {
      std::mt19937_64 check_rng(rng());
      const std::string result = check.run(p, check_rng);
      EXPECT_FALSE(is_failure(result)) << check.name << ", seed " << seed << ": " << result << "\n" << to_cpp(p);
    }
  }
  EXPECT_EQ(drawn, (std::set<ScalarType>{kBool, kInt64, kFloat32, kFloat64}));
}

TEST(FuzzStacks, VmapCatchesAKernelWrongForInt64Only) {
  Program p{.shape = {2, 3}, .y_shape = {2, 3}, .code = {{OpKind::Square, 0, 0}, {OpKind::Add, 2, 1}}};
  auto vmap_check = [&p] {
    std::mt19937_64 rng(7);
    return find_check(kVmap).run(p, rng);
  };
  // square doubled on batched int64 inputs (3 dims under vmap, 2 in the loop).
  const Library lib = plant("square", DispatchKey::CPU, [](DispatchKeySet, Stack& stack) {
    const Tensor x = stack.back().to_tensor();
    stack.back() = x.dtype() == kInt64 && x.dim() >= 3 ? x * x + x * x : x * x;
  });
  EXPECT_EQ(vmap_check(), "");  // float64: square is right
  p.dtype = kInt64;
  expect_caught(vmap_check(), "vmap vs loop: max difference");
}

TEST(FuzzStacks, FiniteDifferencesCatchAWrongDerivative) {
  EXPECT_EQ(run_on(kVjp, OpKind::Mul), "");
  EXPECT_EQ(run_on(kJvp, OpKind::Mul), "");
  // sin(x) + x / 1000: the values change, sin's derivative rule (cos) does not.
  const Library lib = plant_sin([](const Tensor& x) { return x * 1e-3; });
  expect_caught(run_on(kVjp, OpKind::Mul), "vjp vs finite differences: max difference");
  expect_caught(run_on(kJvp, OpKind::Mul), "jvp vs finite differences: max difference");
}

// Failures of the nested check over seeds 1..n on f(x, y) = sin(x * y), [2, 3].
int nested_failures(int n) {
  const Program p{.shape = {2, 3}, .y_shape = {3}, .code = {{OpKind::Mul, 0, 1}, {OpKind::Sin, 2, 2}}};
  int failed = 0;
  for (int seed = 1; seed <= n; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    const std::string result = find_check(kNested).run(p, rng);
    if (is_failure(result)) {
      EXPECT_EQ(result.rfind("transform stack ", 0), 0u) << result;
    }
    failed += is_failure(result);
  }
  return failed;
}

TEST(FuzzStacks, NestedStacksCatchAKernelWrongOnBatchedInputs) {
  EXPECT_EQ(nested_failures(30), 0);
  // sin off by 1e-6 on inputs of 3 or more dims: under vmap (and the Jacobians'
  // batched passes) of the [2, 3] program, never in vmap's reference loop.
  const Library lib = plant_sin([](const Tensor& x) { return x.dim() >= 3 ? 1e-6 : 0.0; });
  EXPECT_GT(nested_failures(30), 0);
}

// Failures of the bad-program check over seeds 1..n of random programs.
int error_failures(int n) {
  int failed = 0;
  for (int seed = 1; seed <= n; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    const Program p = random_program(rng);
    std::mt19937_64 check_rng(rng());
    const std::string result = find_check(kErrors).run(p, check_rng);
    if (is_failure(result)) {
      EXPECT_EQ(result.rfind("bad program", 0), 0u) << result;
      EXPECT_NE(result.find("index_select"), std::string::npos) << result;
    }
    failed += is_failure(result);
  }
  return failed;
}

// index_select reading past the end without an error: caught eagerly and, when
// only its batched form skips the check, under stacks with a vmap.
TEST(FuzzStacks, ErrorsCatchAnOpThatStopsRaising) {
  EXPECT_EQ(error_failures(200), 0);
  // index_select raising for inputs of fewer than unchecked_from_dim dims, reading nothing otherwise.
  auto unchecked_on = [](int64_t unchecked_from_dim) {
    return plant("index_select", DispatchKey::CPU, [unchecked_from_dim](DispatchKeySet, Stack& stack) {
      const Tensor self = stack[stack.size() - 3].to_tensor();
      const int64_t dim = stack[stack.size() - 2].to_int();
      const Tensor index = stack.back().to_tensor();
      STRATA_CHECK(self.dim() >= unchecked_from_dim, "strata::index_select", "index out of range");
      std::vector<int64_t> sizes = self.sizes().vec();
      sizes[static_cast<size_t>(dim < 0 ? dim + self.dim() : dim)] = index.numel();
      stack.resize(stack.size() - 2);
      stack.back() = zeros(sizes, self.dtype());
    });
  };
  {
    const Library lib = unchecked_on(0);
    EXPECT_GT(error_failures(200), 0);
  }
  const Library lib = unchecked_on(2);
  EXPECT_GT(error_failures(200), 0);
}

}  // namespace
}  // namespace strata::fuzz
