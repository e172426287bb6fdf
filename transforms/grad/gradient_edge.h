#pragma once

#include <cstdint>
#include <vector>

#include "transforms/grad/node.h"
#include "transforms/tensor_wrapper.h"

namespace strata::autograd {

// The edge a gradient for a tensor with this autodiff state flows along: its
// grad_fn, or for an input leaf, its sink (made by GradCall::enter).
inline Edge gradient_edge(const AutogradMeta& meta) {
  return meta.grad_fn ? Edge{meta.grad_fn, meta.output_nr} : Edge{meta.grad_sink, 0};
}

// The edge of t's wrapper at `level`; none where t is not a wrapper of that level
// that requires grad (a constant there).
inline Edge gradient_edge(const Tensor& t, int64_t level) {
  const TensorWrapper* w = wrapper_at_level(t, level);
  if (w == nullptr || !w->autograd().requires_grad) return {};
  return gradient_edge(w->autograd());
}

// One edge per input, for a node standing for a call on `inputs` at `level`.
inline EdgeList gradient_edges(const std::vector<Tensor>& inputs, int64_t level) {
  EdgeList edges;
  for (const Tensor& t : inputs) edges.push_back(gradient_edge(t, level));
  return edges;
}

// Whether a gradient can flow along any of the edges (else no node is needed).
inline bool any_tracked(const EdgeList& edges) {
  for (const Edge& e : edges) {
    if (e.node) return true;
  }
  return false;
}

// Makes `node` the grad_fn of each floating-point wrapper in `wrapped`, wrapper i
// as its output i (the outputs of the call it stands for).
inline void set_grad_fn(const std::vector<Tensor>& wrapped, const IntrusivePtr<Node>& node) {
  for (size_t i = 0; i < wrapped.size(); ++i) {
    if (!wrapped[i].defined() || !is_floating_point(wrapped[i].dtype())) continue;
    AutogradMeta& meta = as_wrapper(wrapped[i])->autograd();
    meta.requires_grad = true;
    meta.grad_fn = node;
    meta.output_nr = static_cast<uint32_t>(i);
  }
}

}  // namespace strata::autograd
