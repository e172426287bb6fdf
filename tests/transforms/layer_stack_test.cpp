// The dynamic layer stack (transforms/layer_stack.h): a layer popped for a call
// below it (BelowTopLayer) leaves the stack, a transform started meanwhile is
// the only layer above the ones still live, and the popped layer comes back
// with the key sets it had, in the reverse order of the pops. A layer entered
// directly (Note [Layers entered directly]) sets its own keys up, and a layer
// pushed on it starts from the key sets without them.
#include "transforms/layer_stack.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "dispatcher/local_dispatch_key_set.h"

namespace strata {
namespace {

class TestInterpreter final : public Interpreter {
 public:
  explicit TestInterpreter(TransformKind kind) : kind_(kind) {}
  TransformKind kind() const override { return kind_; }
  DispatchKeySet keys() const override { return DispatchKeySet(DispatchKey::Functionalize); }

 private:
  TransformKind kind_;
};

std::shared_ptr<Interpreter> layer(TransformKind kind) {
  return std::make_shared<TestInterpreter>(kind);
}

constexpr DispatchKeySet kFront{DispatchKey::DynamicLayerFront};

TEST(LayerStack, APoppedLayerLeavesTheStackAndComesBackOnTop) {
  ASSERT_TRUE(layer_stack_empty());
  LayerScope outer(layer(TransformKind::Vmap));
  LayerScope inner(layer(TransformKind::Grad));
  const LocalDispatchKeySet with_both = local_dispatch_key_set();
  {
    BelowTopLayer below;
    EXPECT_EQ(layer_stack_depth(), 1u);
    EXPECT_EQ(top_layer("test").level, outer.level());
    EXPECT_EQ(layer_kind(0), TransformKind::Vmap);
    // The key sets from before `inner` was pushed: the front key still
    // included, for `outer`.
    EXPECT_TRUE(local_dispatch_key_set().included.has(DispatchKey::DynamicLayerFront));
  }
  EXPECT_EQ(layer_stack_depth(), 2u);
  EXPECT_EQ(top_layer("test").level, inner.level());
  EXPECT_EQ(local_dispatch_key_set().included, with_both.included);
  EXPECT_EQ(local_dispatch_key_set().excluded, with_both.excluded);
}

TEST(LayerStack, PopsNestAndRestoreInReverseOrder) {
  const LocalDispatchKeySet before = local_dispatch_key_set();
  LayerScope a(layer(TransformKind::Vmap));
  LayerScope b(layer(TransformKind::Grad));
  {
    BelowTopLayer pop_b;
    {
      BelowTopLayer pop_a;
      EXPECT_TRUE(layer_stack_empty());
      EXPECT_EQ(describe_layer_stack(), "");
      EXPECT_EQ(local_dispatch_key_set().included, before.included);
      EXPECT_FALSE(local_dispatch_key_set().included.has(DispatchKey::DynamicLayerFront));
    }
    EXPECT_EQ(layer_stack_depth(), 1u);
    EXPECT_EQ(top_layer("test").level, a.level());
  }
  EXPECT_EQ(top_layer("test").level, b.level());
  EXPECT_EQ(describe_layer_stack(), "grad(level " + std::to_string(b.level()) + ") > vmap(level " +
                                        std::to_string(a.level()) + ")");
}

TEST(LayerStack, ATransformStartedBelowAPoppedLayerSeesOnlyTheLiveOnes) {
  LayerScope a(layer(TransformKind::Vmap));
  LayerScope b(layer(TransformKind::Grad));
  const DynamicLayer& b_layer = top_layer("test");
  {
    BelowTopLayer pop_b;
    // Many transforms started while b is popped (as a kernel below it may):
    // each is on top of a, and b, held by reference, is untouched.
    std::vector<std::unique_ptr<LayerScope>> started;
    for (int i = 0; i < 40; ++i) {
      started.push_back(std::make_unique<LayerScope>(layer(TransformKind::Jvp)));
      EXPECT_EQ(layer_stack_depth(), static_cast<size_t>(i) + 2);
      EXPECT_EQ(top_layer("test").level, started.back()->level());
    }
    EXPECT_EQ(layer_kind(0), TransformKind::Vmap);
    EXPECT_EQ(layer_kind(1), TransformKind::Jvp);
    {
      BelowTopLayer pop_last;
      EXPECT_EQ(top_layer("test").level, started[started.size() - 2]->level());
    }
    while (!started.empty()) started.pop_back();
    EXPECT_EQ(layer_stack_depth(), 1u);
    EXPECT_EQ(top_layer("test").level, a.level());
  }
  EXPECT_EQ(&top_layer("test"), &b_layer);
  EXPECT_EQ(b_layer.level, b.level());
  EXPECT_EQ(layer_stack_depth(), 2u);
}

TEST(LayerStack, EndingAScopeRestoresTheKeySetsFromBeforeIt) {
  const LocalDispatchKeySet before = local_dispatch_key_set();
  {
    LayerScope a(layer(TransformKind::Functionalize));
    EXPECT_TRUE((local_dispatch_key_set().included & kFront) == kFront);
    EXPECT_THROW(layer_kind(1), Error);
  }
  EXPECT_TRUE(layer_stack_empty());
  EXPECT_THROW(top_layer("test"), Error);
  EXPECT_EQ(local_dispatch_key_set().included, before.included);
  EXPECT_EQ(local_dispatch_key_set().excluded, before.excluded);
}

// A layer with `keys` that enters directly or through the front fallback.
class KeyedInterpreter final : public Interpreter {
 public:
  KeyedInterpreter(DispatchKey key, bool direct) : key_(key), direct_(direct) {}
  TransformKind kind() const override {
    return key_ == DispatchKey::Batched ? TransformKind::Vmap : TransformKind::Functionalize;
  }
  DispatchKeySet keys() const override { return DispatchKeySet(key_); }
  bool enters_directly() const override { return direct_; }

 private:
  DispatchKey key_;
  bool direct_;
};

std::shared_ptr<Interpreter> direct_layer() {
  return std::make_shared<KeyedInterpreter>(DispatchKey::Functionalize, true);
}
std::shared_ptr<Interpreter> front_layer() {
  return std::make_shared<KeyedInterpreter>(DispatchKey::Batched, false);
}

// The key sets of a direct Functionalize layer pushed on `start`.
void expect_direct(const LocalDispatchKeySet& start) {
  const LocalDispatchKeySet& now = local_dispatch_key_set();
  EXPECT_EQ(now.included, (start.included - kFront) | DispatchKeySet(DispatchKey::Functionalize));
  EXPECT_EQ(now.excluded,
            (start.excluded | DispatchKeySet{DispatchKey::Batched, DispatchKey::AutogradCPU,
                                             DispatchKey::AutogradCUDA, DispatchKey::Mode}) -
                DispatchKeySet(DispatchKey::Functionalize));
}

TEST(LayerStack, ALayerEnteredDirectlyIncludesItsKeyAndHidesTheOthers) {
  const LocalDispatchKeySet before = local_dispatch_key_set();
  {
    LayerScope f(direct_layer());
    expect_direct(before);
    const LocalDispatchKeySet direct = local_dispatch_key_set();
    {
      LayerScope v(front_layer());
      // As if f had entered through the front fallback: nothing of f's hidden.
      EXPECT_EQ(local_dispatch_key_set().included, before.included | kFront);
      EXPECT_EQ(local_dispatch_key_set().excluded, before.excluded);
      {
        BelowTopLayer below;
        EXPECT_EQ(local_dispatch_key_set().included, direct.included);
        EXPECT_EQ(local_dispatch_key_set().excluded, direct.excluded);
      }
      LayerScope f2(direct_layer());
      expect_direct({before.included | kFront, before.excluded});
      {
        // A direct layer on a direct one: undone, the second's adjustments
        // leave the key sets of the layer below them.
        LayerScope f3(direct_layer());
        expect_direct({before.included | kFront, before.excluded});
        LayerScope v2(front_layer());
        EXPECT_EQ(local_dispatch_key_set().included, before.included | kFront);
        EXPECT_EQ(local_dispatch_key_set().excluded, before.excluded);
      }
    }
    EXPECT_EQ(local_dispatch_key_set().included, direct.included);
    EXPECT_EQ(local_dispatch_key_set().excluded, direct.excluded);
  }
  EXPECT_EQ(local_dispatch_key_set().included, before.included);
  EXPECT_EQ(local_dispatch_key_set().excluded, before.excluded);
}

TEST(LayerStack, ALayerEnteredDirectlyUnhidesItsOwnKeyAndALayerAboveHidesItAgain) {
  const ExcludeDispatchKeyGuard hidden(DispatchKey::Functionalize);
  const LocalDispatchKeySet before = local_dispatch_key_set();
  LayerScope f(direct_layer());
  expect_direct(before);
  LayerScope v(front_layer());
  EXPECT_TRUE(local_dispatch_key_set().excluded.has(DispatchKey::Functionalize));
  EXPECT_FALSE(local_dispatch_key_set().included.has(DispatchKey::Functionalize));
}

}  // namespace
}  // namespace strata
