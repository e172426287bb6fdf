#include <gtest/gtest.h>

#include <sstream>
#include <thread>
#include <vector>

#include "dispatcher/local_dispatch_key_set.h"
#include "tensor/dispatch_key.h"

namespace strata {
namespace {

// DESIGN.md's runtime keys, highest priority first.
const std::vector<DispatchKey> kPriorityOrder = {
    DispatchKey::DynamicLayerFront, DispatchKey::Mode,          DispatchKey::Batched,
    DispatchKey::Functionalize,     DispatchKey::AutogradCUDA,  DispatchKey::AutogradCPU,
    DispatchKey::BackendSelect,     DispatchKey::DynamicLayerBack, DispatchKey::CUDA,
    DispatchKey::CPU,
};

TEST(DispatchKeySet, HighestKeyFollowsPriorityOrder) {
  for (size_t i = 0; i < kPriorityOrder.size(); ++i) {
    DispatchKeySet set;
    for (size_t j = i; j < kPriorityOrder.size(); ++j) set = set.add(kPriorityOrder[j]);
    EXPECT_EQ(set.highest(), kPriorityOrder[i]) << "set " << set;
  }
}

TEST(DispatchKeySet, EveryPairIsOrdered) {
  for (size_t i = 0; i < kPriorityOrder.size(); ++i) {
    for (size_t j = i + 1; j < kPriorityOrder.size(); ++j) {
      DispatchKeySet pair{kPriorityOrder[j], kPriorityOrder[i]};
      EXPECT_EQ(pair.highest(), kPriorityOrder[i]);
    }
  }
}

TEST(DispatchKeySet, EmptySetHasUndefinedAsHighest) {
  EXPECT_TRUE(DispatchKeySet().empty());
  EXPECT_EQ(DispatchKeySet().highest(), DispatchKey::Undefined);
  EXPECT_TRUE(DispatchKeySet(DispatchKey::Undefined).empty());
}

TEST(DispatchKeySet, SetAlgebra) {
  DispatchKeySet a{DispatchKey::CPU, DispatchKey::AutogradCPU};
  DispatchKeySet b{DispatchKey::AutogradCPU, DispatchKey::Batched};
  EXPECT_EQ((a | b), (DispatchKeySet{DispatchKey::CPU, DispatchKey::AutogradCPU, DispatchKey::Batched}));
  EXPECT_EQ((a & b), DispatchKeySet(DispatchKey::AutogradCPU));
  EXPECT_EQ((a - b), DispatchKeySet(DispatchKey::CPU));
  EXPECT_TRUE(a.has(DispatchKey::CPU));
  EXPECT_FALSE(a.has(DispatchKey::Batched));
  EXPECT_EQ(a.remove(DispatchKey::CPU), DispatchKeySet(DispatchKey::AutogradCPU));
}

TEST(DispatchKeySet, BelowExcludesTheKeyAndEverythingAbove) {
  DispatchKeySet below = DispatchKeySet::below(DispatchKey::AutogradCPU);
  EXPECT_TRUE(below.has(DispatchKey::BackendSelect));
  EXPECT_TRUE(below.has(DispatchKey::DynamicLayerBack));
  EXPECT_TRUE(below.has(DispatchKey::CPU));
  EXPECT_FALSE(below.has(DispatchKey::AutogradCPU));
  EXPECT_FALSE(below.has(DispatchKey::Batched));
  EXPECT_TRUE(DispatchKeySet::below(DispatchKey::CPU).empty());
  EXPECT_EQ(DispatchKeySet::full().highest(), DispatchKey::DynamicLayerFront);
}

TEST(DispatchKeySet, IteratesFromHighestToLowest) {
  DispatchKeySet set{DispatchKey::CPU, DispatchKey::Batched, DispatchKey::AutogradCPU};
  std::vector<DispatchKey> seen;
  set.for_each_key([&](DispatchKey k) { seen.push_back(k); });
  EXPECT_EQ(seen, (std::vector<DispatchKey>{DispatchKey::Batched, DispatchKey::AutogradCPU,
                                            DispatchKey::CPU}));
  std::ostringstream text;
  text << set;
  EXPECT_EQ(text.str(), "DispatchKeySet(Batched, AutogradCPU, CPU)");
}

TEST(DispatchKey, AliasKeysAreNotRuntimeKeys) {
  EXPECT_TRUE(is_alias_key(DispatchKey::CompositeImplicitAutograd));
  EXPECT_TRUE(is_alias_key(DispatchKey::CompositeExplicitAutograd));
  EXPECT_TRUE(is_alias_key(DispatchKey::Autograd));
  EXPECT_FALSE(is_alias_key(DispatchKey::DynamicLayerFront));
  EXPECT_LE(kNumRuntimeKeys, 64);
}

TEST(LocalDispatchKeySet, GuardsNestAndRestore) {
  const LocalDispatchKeySet before = local_dispatch_key_set();
  {
    IncludeDispatchKeyGuard include(DispatchKey::Batched);
    EXPECT_TRUE(local_dispatch_key_set().included.has(DispatchKey::Batched));
    {
      ExcludeDispatchKeyGuard exclude(DispatchKey::Batched);
      EXPECT_TRUE(local_dispatch_key_set().excluded.has(DispatchKey::Batched));
    }
    EXPECT_FALSE(local_dispatch_key_set().excluded.has(DispatchKey::Batched));
  }
  EXPECT_EQ(local_dispatch_key_set().included, before.included);
  EXPECT_EQ(local_dispatch_key_set().excluded, before.excluded);
}

TEST(LocalDispatchKeySet, DefaultIncludesBackendSelectOnEveryThread) {
  EXPECT_TRUE(local_dispatch_key_set().included.has(DispatchKey::BackendSelect));
  DispatchKeySet seen;
  std::thread([&] { seen = local_dispatch_key_set().included; }).join();
  EXPECT_EQ(seen, DispatchKeySet(DispatchKey::BackendSelect));
}

}  // namespace
}  // namespace strata
