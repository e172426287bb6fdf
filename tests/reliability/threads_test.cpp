// Several threads using the library at once: transforms, registration while
// other threads call ops, and the allocator's per-thread caches with tensors
// freed on another thread than the one that made them. Each thread's result must
// equal the single-thread one. CI also runs this binary under ThreadSanitizer
// (STRATA_TSAN), which must report nothing.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_support.h"

namespace strata {
namespace {

constexpr int kThreads = 4;

template <class F>
void run_threads(F&& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { body(t); });
  for (std::thread& thread : threads) thread.join();
}

// Bitwise: the same program on the same inputs gives the same bits on any thread.
bool same(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && (a - b).abs().sum().item<double>() == 0;
}

Tensor loss(const Tensor& w, const Tensor& x) { return (x.matmul(w)).tanh().square().sum(); }

TEST(Threads, TransformsInSeveralThreadsAtOnce) {
  const Tensor w = arange(6, kFloat64).reshape({3, 2}) * (1.0 / 7);
  const Tensor xs = arange(12, kFloat64).reshape({4, 3}).sin();
  const Tensor expected_grads = vmap(grad<0>(&loss), {.in_dims = {none, 0}})(w, xs);
  const Tensor expected_jac = jacrev(&loss)(w, xs.select(0, 0));
  const Tensor expected_jvp = std::get<1>(
      jvp([&](const Tensor& v) { return loss(v, xs); }, std::tuple{w}, std::tuple{ones_like(w)}));
  std::vector<int> ok(kThreads, 0);
  run_threads([&](int t) {
    for (int i = 0; i < 20; ++i) {
      const Tensor g = vmap(grad<0>(&loss), {.in_dims = {none, 0}})(w, xs);
      const Tensor j = jacrev(&loss)(w, xs.select(0, 0));
      const Tensor d = std::get<1>(jvp([&](const Tensor& v) { return loss(v, xs); }, std::tuple{w},
                                       std::tuple{ones_like(w)}));
      if (!same(g, expected_grads) || !same(j, expected_jac) || !same(d, expected_jvp)) return;
    }
    ok[t] = 1;
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[t], 1) << "thread " << t;
}

TEST(Threads, RegistrationWhileOtherThreadsCall) {
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t) {
    callers.emplace_back([&] {
      const Tensor x = arange(4, kFloat32);
      while (!done.load()) {
        if (!same(x + x, x * 2.0)) ++wrong;
      }
    });
  }
  for (int i = 0; i < 50; ++i) {
    Library defs(Library::Kind::Def, "threads_test", std::nullopt, __FILE__, __LINE__);
    defs.def("twice_" + std::to_string(i) + "(Tensor x) -> Tensor");
    Library cpu(Library::Kind::Impl, "threads_test", DispatchKey::CPU, __FILE__, __LINE__);
    cpu.impl("twice_" + std::to_string(i), [](const Tensor& x) { return x * 2.0; });
  }
  done = true;
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Threads, TensorsFreedOnAnotherThread) {
  // Each thread makes tensors and hands them to the next, which frees them: the
  // allocator's per-thread caches see blocks come back from other threads.
  std::vector<std::vector<Tensor>> made(kThreads);
  run_threads([&](int t) {
    for (int i = 0; i < 200; ++i) made[t].push_back(full({16 + i % 7}, static_cast<double>(t)));
  });
  std::vector<double> sums(kThreads, 0);
  run_threads([&](int t) {
    std::vector<Tensor> mine = std::move(made[(t + 1) % kThreads]);
    for (const Tensor& m : mine) sums[t] += m.sum().item<float>();
    mine.clear();
    for (int i = 0; i < 200; ++i) sums[t] += ones({16 + i % 7}).sum().item<float>();
  });
  for (int t = 0; t < kThreads; ++t) {
    double expected = 0;
    for (int i = 0; i < 200; ++i) expected += (16 + i % 7) * (((t + 1) % kThreads) + 1.0);
    EXPECT_EQ(sums[t], expected) << "thread " << t;
  }
}

}  // namespace
}  // namespace strata
