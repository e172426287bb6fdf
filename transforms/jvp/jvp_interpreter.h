#pragma once

#include "transforms/tensor_wrapper.h"

namespace strata::forward {

// The interpreter of a jvp layer. Its tensors are TensorWrappers like grad's,
// carrying a tangent instead of a graph, so calls reach the same Autograd
// kernels; these run the op's forward formula when the top layer is a jvp
// layer (Note [Forward formulas]).
class JvpInterpreter final : public WrapperInterpreter {
 public:
  TransformKind kind() const override { return TransformKind::Jvp; }
};

}  // namespace strata::forward
