#pragma once

#include "transforms/tensor_wrapper.h"

namespace strata::autograd {

// The interpreter of a grad (or vjp) layer: calls reach the Autograd kernels,
// which record the backward graph on this level's TensorWrappers.
class GradInterpreter final : public WrapperInterpreter {
 public:
  TransformKind kind() const override { return TransformKind::Grad; }
};

}  // namespace strata::autograd
