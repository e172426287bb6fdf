#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "transforms/layer_stack.h"

namespace strata::autograd {

// The untemplated part of one call of grad, grad_and_value or vjp: a grad
// layer, the inputs wrapped at its level, and the backward pass.
class GradCall {
 public:
  // `transform` names the API in errors ("grad", "vjp").
  explicit GradCall(const char* transform);

  int64_t level() const { return scope_.level(); }
  // Wraps an input leaf at this level; a differentiable one (argument `argnum`)
  // must be floating point and becomes a leaf whose gradient backward() returns.
  Tensor enter(const Tensor& t, bool differentiable, size_t argnum);
  // A result as the caller sees it: unwrapped from this level.
  Tensor leave(const Tensor& t) const;
  // grad's requirement: a floating-point tensor with one element and no dims.
  void check_scalar_output(const Tensor& out) const;
  // Ends the layer. Later calls to backward() still work (vjp_fn).
  // Ends the layer; views among `outputs` whose base was written after their
  // history or tangent was set are brought up to date first (while the layer runs).
  void end(const std::vector<Tensor>& outputs = {});

  // Ends the layer if still running, then backpropagates `cotangents` from
  // `outputs` (wrappers at this level; anything else has no gradient) and
  // returns one gradient per differentiable leaf (zeros where nothing flows).
  std::vector<Tensor> backward(const std::vector<Tensor>& outputs,
                               const std::vector<Tensor>& cotangents);

  const char* transform() const { return transform_; }
  const std::vector<Tensor>& leaves() const { return leaves_; }

 private:
  LayerScope scope_;
  const char* transform_;
  std::vector<Tensor> leaves_;
};

// vjp_fn's checks: one cotangent per output, each with its output's shape and dtype.
void check_cotangents(const std::vector<Tensor>& outputs, const std::vector<Tensor>& cotangents);

}  // namespace strata::autograd
