#pragma once

#include "transforms/layer_stack.h"

namespace strata::autograd {

// The interpreter of a grad (or vjp) layer: calls reach the Autograd kernels,
// which record the backward graph on this level's TensorWrappers.
class GradInterpreter final : public Interpreter {
 public:
  TransformKind kind() const override { return TransformKind::Grad; }
  DispatchKeySet keys() const override {
    return {DispatchKey::AutogradCPU, DispatchKey::AutogradCUDA};
  }
  // Unwraps this level's TensorWrappers, runs the call below, and wraps the
  // results at this level (an in-place op hands back the wrapper it was given).
  void send_to_next(const OperatorHandle& op, Stack& stack) override;
  bool default_send_to_next() const override { return false; }
};

}  // namespace strata::autograd
