#pragma once

#include "transforms/layer_stack.h"

namespace strata::forward {

// The interpreter of a jvp layer. Its tensors are TensorWrappers like grad's,
// carrying a tangent instead of a graph, so calls reach the same Autograd
// kernels; these run the op's forward formula when the top layer is a jvp
// layer (Note [Forward formulas]).
class JvpInterpreter final : public Interpreter {
 public:
  TransformKind kind() const override { return TransformKind::Jvp; }
  DispatchKeySet keys() const override {
    return {DispatchKey::AutogradCPU, DispatchKey::AutogradCUDA};
  }
  void send_to_next(const OperatorHandle& op, Stack& stack) override;
  bool default_send_to_next() const override { return false; }
};

}  // namespace strata::forward
