// IntrusivePtr's counting (tensor/intrusive_ptr.h): a just-made object starts at
// one handle, and the last handle frees it without a locked decrement. These
// tests count destructions, and share handles across threads so that a count
// that went wrong frees an object twice or never (AddressSanitizer in CI).
#include "tensor/intrusive_ptr.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace strata {
namespace {

std::atomic<int> g_destroyed{0};

struct Counted : RefCounted {
  ~Counted() override { g_destroyed.fetch_add(1); }
};

TEST(IntrusivePtr, MadeObjectHasOneHandleAndTheLastFreesIt) {
  g_destroyed = 0;
  IntrusivePtr<Counted> a = make_intrusive<Counted>();
  EXPECT_EQ(a->use_count(), 1u);
  {
    IntrusivePtr<Counted> b = a;
    EXPECT_EQ(a->use_count(), 2u);
  }
  EXPECT_EQ(a->use_count(), 1u);
  EXPECT_EQ(g_destroyed.load(), 0);
  a = nullptr;
  EXPECT_EQ(g_destroyed.load(), 1);
}

TEST(IntrusivePtr, HandlesCopiedAndDroppedOnManyThreadsFreeOnce) {
  g_destroyed = 0;
  constexpr int kObjects = 200;
  constexpr int kThreads = 4;
  std::vector<IntrusivePtr<Counted>> objects;
  for (int i = 0; i < kObjects; ++i) objects.push_back(make_intrusive<Counted>());
  // Every thread takes a handle to every object, copies it around, and drops it;
  // the main thread drops its own handles while they run.
  std::vector<std::vector<IntrusivePtr<Counted>>> handed(kThreads, objects);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&handed, t] {
      for (IntrusivePtr<Counted>& p : handed[static_cast<size_t>(t)]) {
        for (int k = 0; k < 50; ++k) {
          IntrusivePtr<Counted> copy = p;
          IntrusivePtr<Counted> moved = std::move(copy);
        }
        p = nullptr;
      }
    });
  }
  objects.clear();
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(g_destroyed.load(), kObjects);
}

}  // namespace
}  // namespace strata
