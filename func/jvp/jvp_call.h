#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "transforms/layer_stack.h"

namespace strata::forward {

// The untemplated part of one call of jvp: a jvp layer, the primals wrapped at
// its level with their tangents, and the outputs' primals and tangents.
class JvpCall {
 public:
  // `transform` names the API in errors ("jvp", "jacfwd").
  explicit JvpCall(const char* transform);

  int64_t level() const { return scope_.level(); }
  // Wraps a primal leaf of argument `argnum` at this level with its tangent,
  // which must match the primal's shape and dtype.
  Tensor enter(const Tensor& primal, const Tensor& tangent, size_t argnum);
  // Argument `argnum` holds `primal_leaves` tensors and its tangent `tangent_leaves`.
  void check_leaf_count(size_t argnum, size_t primal_leaves, size_t tangent_leaves) const;
  // Ends the layer; the outputs keep their tangents.
  // Ends the layer; views among `outputs` whose base was written after their
  // history or tangent was set are brought up to date first (while the layer runs).
  void end(const std::vector<Tensor>& outputs = {});
  // An output's primal, and its tangent (zeros for an output with none); call after end().
  Tensor primal(const Tensor& out) const;
  Tensor tangent(const Tensor& out) const;

 private:
  LayerScope scope_;
  const char* transform_;
};

// One tangent per primal leaf, each with its primal's shape and dtype.
void check_tangents(const char* transform, const std::vector<Tensor>& primals,
                    const std::vector<Tensor>& tangents);

}  // namespace strata::forward
