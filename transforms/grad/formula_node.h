#pragma once

#include <string>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "transforms/grad/derivative.h"
#include "transforms/grad/node.h"

namespace strata::autograd {

// Shape and dtype of a tensor the node does not keep.
struct TensorMeta {
  DimVector sizes;
  ScalarType dtype = ScalarType::Float32;
  bool needs_grad = false;
};

struct OutputInfo {
  TensorMeta meta;
  Tensor saved;  // undefined unless the formula reads it
};

// Per argument: its first tensor slot, or kNoSlot.
using SlotIndex = SmallVector<uint16_t, 8>;

// The backward node of one call of an op with a Derivative: it keeps the
// arguments and outputs the formula reads (unwrapped to the level below the
// grad level), their versions, and the shapes of every tensor argument.
class FormulaNode final : public Node {
 public:
  FormulaNode(const OperatorHandle& op, const Derivative& derivative, int64_t level,
              NodeVector<Edge> next_edges, Stack args, SlotIndex first_slot,
              NodeVector<TensorMeta> slots, uint32_t needs_grad_args,
              NodeVector<OutputInfo> outputs);

  NodeVector<Tensor> apply(NodeVector<Tensor>& grads_out) override;
  uint32_t num_outputs() const override { return static_cast<uint32_t>(outputs_.size()); }
  std::string name() const override;

  static constexpr uint16_t kNoSlot = UINT16_MAX;

 private:
  friend class BackwardContext;
  // Calls f(tensor, is_output, position) for each tensor the node keeps.
  template <class F>
  void for_each_saved(F&& f) const;
  void check_saved_versions() const;

  OperatorHandle op_;
  Derivative derivative_;
  int64_t level_;
  Stack args_;
  SlotIndex first_slot_;
  NodeVector<TensorMeta> slots_;  // per tensor argument (list elements flattened)
  uint32_t needs_grad_args_;      // bit i: some slot of argument i needs a gradient
  NodeVector<OutputInfo> outputs_;
  SmallVector<uint32_t, 6> saved_versions_;  // in for_each_saved order
};

}  // namespace strata::autograd
