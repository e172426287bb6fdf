#include "func/grad/grad_call.h"

#include "func/grad/engine.h"
#include "ops/creation.h"
#include "tensor/error.h"
#include "transforms/grad/gradient_edge.h"
#include "transforms/grad/grad_interpreter.h"
#include "transforms/grad/node.h"
#include "transforms/tensor_wrapper.h"
#include "transforms/view_tracking.h"

namespace strata::autograd {

GradCall::GradCall(const char* transform)
    : scope_(std::make_shared<GradInterpreter>()), transform_(transform) {}

void GradCall::end(const std::vector<Tensor>& outputs) {
  if (!layer_stack_empty() && top_layer("end").level == level()) refresh_stale_views(outputs, level());
  scope_.pop();
}

Tensor GradCall::enter(const Tensor& t, bool differentiable, size_t argnum) {
  STRATA_CHECK(t.defined(), transform_, "argument ", argnum, " holds an undefined tensor");
  Tensor wrapped = wrap_at_level(t, level());
  if (differentiable) {
    STRATA_CHECK(is_floating_point(t.dtype()), transform_, "argument ", argnum, " (shape ",
                 shape_string(t.sizes()), ") has dtype ", to_string(t.dtype()),
                 "; only floating-point tensors can be differentiated (level ", level(), ")");
    AutogradMeta& meta = static_cast<TensorWrapper*>(wrapped.impl())->autograd();
    meta.requires_grad = true;
    // Made now rather than on first use, so that backward() only reads the graph
    // and one vjp_fn may run in several threads at once.
    meta.grad_sink = make_intrusive<GradSink>();
    leaves_.push_back(wrapped);
  }
  return wrapped;
}

Tensor GradCall::leave(const Tensor& t) const { return unwrap_at_level(t, level()); }

void GradCall::check_scalar_output(const Tensor& out) const {
  STRATA_CHECK(out.defined(), transform_, "the function returned an undefined tensor");
  STRATA_CHECK(out.dim() == 0, transform_,
               "the function must return a scalar (0-dim) tensor, but returned shape ",
               shape_string(out.sizes()), " (level ", level(), "); use vjp for other outputs");
  STRATA_CHECK(is_floating_point(out.dtype()), transform_,
               "the function must return a floating-point tensor, but returned ",
               to_string(out.dtype()), " (level ", level(), ")");
}

std::vector<Tensor> GradCall::backward(const std::vector<Tensor>& outputs,
                                       const std::vector<Tensor>& cotangents) {
  end();
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    TensorWrapper* w = wrapper_at_level(outputs[i], level());
    if (w == nullptr || !w->autograd().requires_grad) continue;
    // An output that is itself an input leaf: its gradient goes straight to the sink.
    roots.push_back(autograd::gradient_edge(w->autograd()));
    root_grads.push_back(cotangents[i]);
  }
  std::vector<const Node*> sinks;
  for (const Tensor& leaf : leaves_) {
    sinks.push_back(static_cast<TensorWrapper*>(leaf.impl())->autograd().grad_sink.get());
  }
  std::vector<Tensor> grads = run_backward(roots, root_grads, sinks);
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) grads[i] = zeros_like(leave(leaves_[i]));
  }
  return grads;
}

void check_cotangents(const std::vector<Tensor>& outputs, const std::vector<Tensor>& cotangents) {
  STRATA_CHECK(outputs.size() == cotangents.size(), "vjp_fn", "expected ", outputs.size(),
               " cotangent tensors (one per output), got ", cotangents.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    const Tensor& ct = cotangents[i];
    STRATA_CHECK(ct.defined(), "vjp_fn", "cotangent ", i, " is undefined");
    STRATA_CHECK(ct.sizes() == out.sizes() && ct.dtype() == out.dtype(), "vjp_fn", "cotangent ", i,
                 " has shape ", shape_string(ct.sizes()), " and dtype ", to_string(ct.dtype()),
                 ", but output ", i, " has shape ", shape_string(out.sizes()), " and dtype ",
                 to_string(out.dtype()));
  }
}

}  // namespace strata::autograd
