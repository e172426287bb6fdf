// FormulaNode's step of the backward pass (the rest of FormulaNode and
// BackwardContext is in transforms/grad/formula_node.cpp).
#include <string>

#include "ops/creation.h"
#include "tensor/error.h"
#include "transforms/grad/formula_node.h"

// Note [Operator calls live above ops/]
// ops/ registers its derivative formulas and batching rules through
// transforms/grad/derivative.h and transforms/vmap/batching.h, so transforms/
// sits below ops/ and includes no ops/ header. The few things declared in
// transforms/ whose bodies call an operator's C++ function are defined in func/,
// above ops/, as Tensor's methods are declared in tensor/ and defined in ops/:
//   func/grad/formula_apply.cpp   FormulaNode::apply (zeros)
//   func/jvp/forward_context.cpp  ForwardContext, sum_defined, linear_forward (zeros_like, +)
//   func/vmap/loop_fallback.cpp   call_per_sample and the loop fallback (stack)
// Each moved with the helpers it inlines (here BackwardContext's constructor and
// check_saved_versions).

namespace strata::autograd {

BackwardContext::BackwardContext(FormulaNode& node, GradsOut& grads_out, GradList& grads_in)
    : FormulaArguments(node.call_.args.data()),
      node_(node),
      grads_out_(grads_out),
      grads_in_(grads_in),
      needs_grad_args_(node.call_.needs_grad_args) {}

void FormulaNode::check_saved_versions() const {
  if (saved_versions_.empty()) return;  // nothing saved (add, sum, views, ...)
  size_t k = 0;
  for_each_saved([&](const Tensor& t, bool is_output, size_t i) {
    const uint32_t saved = saved_versions_[k++];
    if (t.version() == saved) return;
    const std::string what = is_output ? "output " + std::to_string(i)
                                       : "argument '" + op_.schema().arguments()[i].name + "'";
    STRATA_FAIL(name().c_str(), what, " (shape ", shape_string(t.sizes()), ", ",
                to_string(t.dtype()), "), saved for the backward pass of grad level ", level_,
                ", was modified by an in-place op (version ", saved, ", now ", t.version(),
                "); clone it before modifying it");
  });
}

GradList FormulaNode::apply(NodeVector<Tensor>& grads_out) {
  check_saved_versions();
  for (size_t i = 0; i < grads_out.size(); ++i) {
    const TensorMeta& meta = call_.outputs[i].meta;
    if (!grads_out[i].defined() && is_floating_point(meta.dtype)) {
      grads_out[i] = zeros(meta.sizes, meta.dtype, meta.device);
    }
  }
  GradList grads_in(call_.slots.size());
  BackwardContext context(*this, grads_out, grads_in);
  derivative_.backward(context);
  for (size_t s = 0; s < call_.slots.size(); ++s) {
    Tensor& g = grads_in[s];
    if (!g.defined()) continue;
    const TensorMeta& meta = call_.slots[s];
    if (g.sizes() != IntArrayRef(meta.sizes)) g = sum_to(g, meta.sizes);
    if (g.dtype() != meta.dtype) g = g.to(meta.dtype);
    // A gradient lives where its input does: a CPU number's beside GPU tensors
    // comes back to the CPU.
    if (g.device() != meta.device) g = g.to(meta.device);
  }
  return grads_in;
}

}  // namespace strata::autograd
