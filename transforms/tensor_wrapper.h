#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "dispatcher/ivalue.h"
#include "tensor/tensor.h"
#include "transforms/layer_stack.h"

namespace strata {

namespace autograd {
class Node;
}

// One view op as applied to a tensor: the op and its arguments after the viewed
// one; for an op returning a list (split, unbind), which element.
struct ViewStep {
  OperatorHandle op;
  Stack args;
  int64_t list_index = -1;
};

// How a view at a grad or jvp level was made (Note [Views and in-place writes]).
struct ViewOrigin {
  // The root base, a wrapper at the same level that is not a view; undefined
  // when the root is a tensor captured from outside the level.
  Tensor base;
  // The view ops that make this view from the base, in order.
  std::vector<ViewStep> steps;
  // The base's write_version this view's history and tangent reflect.
  uint64_t base_version = 0;
  // Made by expand or as_strided: its elements may share memory, so a write
  // through it has no single region of the base to land in.
  bool may_overlap = false;
};

// Autodiff state of a tensor at one grad or jvp level.
struct AutogradMeta {
  bool requires_grad = false;
  // Set for the output of a view op at this level.
  std::unique_ptr<ViewOrigin> view;
  // On a root base: bumped by every in-place op on it or on a view of it.
  uint64_t write_version = 0;
  // Which output of grad_fn this tensor is.
  uint32_t output_nr = 0;
  // The node that produced it; null for leaves.
  IntrusivePtr<autograd::Node> grad_fn;
  // A leaf that requires grad: the node its gradient flows into.
  IntrusivePtr<autograd::Node> grad_sink;
  // At a jvp level: the tangent, a tensor of the level below with the wrapped
  // value's shape and dtype; undefined for a zero tangent.
  Tensor tangent;
};

// A tensor seen at one grad or jvp level: it wraps the tensor of the level below
// (a plain tensor, a batched tensor or a wrapper of an outer level) and carries
// this level's autodiff state. Its sizes, strides and dtype mirror the wrapped
// tensor's; it has no storage, but its values may be read (item, printing).
class TensorWrapper final : public TensorImpl {
 public:
  TensorWrapper(Tensor value, int64_t level);
  ~TensorWrapper() override;

  const Tensor& value() const { return value_; }
  int64_t level() const { return level_; }
  AutogradMeta& autograd() { return autograd_; }
  const AutogradMeta& autograd() const { return autograd_; }

  // Copies sizes and strides from the wrapped tensor (after an in-place op on it).
  void refresh_metadata();

  const char* impl_name() const override { return "TensorWrapper"; }
  const TensorImpl* value_source() const override { return value_.impl()->value_source(); }
  const StorageImpl* underlying_storage() const override {
    return value_.impl()->underlying_storage();
  }

 private:
  Tensor value_;
  int64_t level_;
  AutogradMeta autograd_;
};

// Only wrappers carry the autograd keys, so the test is a bit test.
inline TensorWrapper* as_wrapper(const Tensor& t) {
  if (!t.defined()) return nullptr;
  const DispatchKeySet autograd_keys{DispatchKey::AutogradCPU, DispatchKey::AutogradCUDA};
  if ((t.key_set() & autograd_keys).empty()) return nullptr;
  return static_cast<TensorWrapper*>(t.impl());
}

inline TensorWrapper* wrapper_at_level(const Tensor& t, int64_t level) {
  TensorWrapper* w = as_wrapper(t);
  return w != nullptr && w->level() == level ? w : nullptr;
}

Tensor wrap_at_level(Tensor value, int64_t level);
// Runs `op` one level down, as the back fallback of a grad or jvp level does:
// unwraps the level's wrappers on the stack, pops the layer for the call, and
// wraps the results at `level` (an in-place op hands back the wrapper it was
// given, its metadata refreshed). The Autograd kernels call it directly rather
// than redispatching to DynamicLayerBack: one dispatch less per recorded op.
void call_below_wrapper_level(const OperatorHandle& op, Stack& stack, int64_t level);

// The interpreter of a level whose tensors are TensorWrappers (grad, jvp): its
// calls reach the Autograd kernels, which do the level's work by its kind; its
// back fallback unwraps the level's wrappers, runs the call below, and wraps the
// results at the level (an in-place op hands back the wrapper it was given, its
// metadata refreshed).
class WrapperInterpreter : public Interpreter {
 public:
  DispatchKeySet keys() const final {
    return {DispatchKey::AutogradCPU, DispatchKey::AutogradCUDA};
  }
  void send_to_next(const OperatorHandle& op, Stack& stack) final;
  bool default_send_to_next() const final { return false; }
};

// What t wraps if it is a wrapper at `level`, else t itself (a constant there).
inline Tensor unwrap_at_level(const Tensor& t, int64_t level) {
  TensorWrapper* w = wrapper_at_level(t, level);
  return w != nullptr ? w->value() : t;
}

}  // namespace strata
