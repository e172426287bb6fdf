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
  Device device = kCPU;
  bool needs_grad = false;
};

struct OutputInfo {
  TensorMeta meta;
  Tensor saved;  // undefined unless the formula reads it
};

// Per argument: its first tensor slot, or kNoSlot.
using SlotIndex = SmallVector<uint16_t, 8>;

// What a node keeps of its call, inline for the common op (up to three
// arguments, two tensor arguments, one output), so that recording it makes one
// allocation. The Autograd kernel fills it in place, in the node.
struct RecordedCall {
  InlineVector<IValue, 3> args;  // the tensors the formula reads, unwrapped; other values as passed
  SlotIndex first_slot;
  InlineVector<TensorMeta, 2> slots;  // per tensor argument (list elements flattened)
  uint32_t needs_grad_args = 0;       // bit i: some slot of argument i needs a gradient
  InlineVector<OutputInfo, 1> outputs;
};

// The backward node of one call of an op with a Derivative: it keeps the
// arguments and outputs the formula reads (unwrapped to the level below the
// grad level), their versions, and the shapes of every tensor argument.
class FormulaNode final : public Node {
 public:
  FormulaNode(const OperatorHandle& op, const Derivative& derivative, int64_t level)
      : Node({}), op_(op), derivative_(derivative), level_(level) {}

  // Filled by the Autograd kernel while it records the call (with the edges, in
  // Node::mutable_next_edges()); seal() then notes the saved tensors' versions.
  RecordedCall& call() { return call_; }
  void seal();

  // Defined in func/grad/formula_apply.cpp: it calls zeros (Note [Operator calls
  // live above ops/]).
  GradList apply(NodeVector<Tensor>& grads_out) override;
  uint32_t num_outputs() const override { return static_cast<uint32_t>(call_.outputs.size()); }
  std::string name() const override;

  static constexpr uint16_t kNoSlot = UINT16_MAX;

 private:
  friend class BackwardContext;
  // Calls f(tensor, is_output, position) for each tensor the node keeps.
  template <class F>
  void for_each_saved(F&& f) const;
  void check_saved_versions() const;  // with apply

  OperatorHandle op_;
  Derivative derivative_;
  int64_t level_;
  RecordedCall call_;
  SmallVector<uint32_t, 6> saved_versions_;  // in for_each_saved order
};

template <class F>
void FormulaNode::for_each_saved(F&& f) const {
  for (size_t i = 0; i < call_.args.size(); ++i) {
    const IValue& a = call_.args[i];
    if (a.is_tensor() && a.to_tensor().defined()) f(a.to_tensor(), false, i);
    if (a.is_tensor_list()) {
      for (const Tensor& t : a.to_tensor_list()) f(t, false, i);
    }
  }
  for (size_t i = 0; i < call_.outputs.size(); ++i) {
    if (call_.outputs[i].saved.defined()) f(call_.outputs[i].saved, true, i);
  }
}

}  // namespace strata::autograd
