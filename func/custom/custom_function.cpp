// A custom function's call, one transform level at a time (Note [Custom functions]).
#include <sstream>

#include "func/custom/custom_internal.h"
#include "ops/creation.h"
#include "tensor/error.h"
#include "transforms/grad/gradient_edge.h"
#include "transforms/grad/node.h"
#include "transforms/layer_stack.h"
#include "transforms/tensor_wrapper.h"
#include "transforms/vmap/batched_tensor.h"
#include "transforms/vmap/batching.h"

namespace strata::custom {
namespace {

using FunctionPtr = std::shared_ptr<const FunctionImpl>;

std::vector<Tensor> unwrap_all(const std::vector<Tensor>& inputs, int64_t level) {
  std::vector<Tensor> below;
  below.reserve(inputs.size());
  for (const Tensor& t : inputs) below.push_back(unwrap_at_level(t, level));
  return below;
}

std::vector<Tensor> wrap_all(std::vector<Tensor> outputs, int64_t level) {
  for (Tensor& t : outputs) {
    if (t.defined()) t = wrap_at_level(std::move(t), level);
  }
  return outputs;
}

// The backward step of one call at a grad level: the user's vjp on the inputs
// and outputs as the level below saw them.
class CustomNode final : public autograd::Node {
 public:
  CustomNode(FunctionPtr f, autograd::EdgeList edges, std::vector<Tensor> inputs,
             std::vector<Tensor> outputs)
      : Node(std::move(edges)),
        f_(std::move(f)),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)) {
    for (const Tensor& t : inputs_) versions_.push_back(t.defined() ? t.version() : 0);
    for (const Tensor& t : outputs_) versions_.push_back(t.defined() ? t.version() : 0);
  }

  autograd::GradList apply(autograd::NodeVector<Tensor>& grads_out) override {
    check_versions();
    std::vector<Tensor> cotangents(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Tensor& out = outputs_[i];
      if (grads_out[i].defined()) {
        cotangents[i] = grads_out[i];
      } else if (out.defined() && is_floating_point(out.dtype())) {
        cotangents[i] = zeros_like(out);
      }
    }
    const std::vector<Tensor> grads = f_->rules.vjp(inputs_, outputs_, cotangents);
    check_gradients(*f_, inputs_, grads);
    autograd::GradList result(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (next_edges()[i].node) result[i] = grads[i];
    }
    return result;
  }
  uint32_t num_outputs() const override { return static_cast<uint32_t>(outputs_.size()); }
  std::string name() const override { return f_->rules.name; }

 private:
  // The vjp reads the inputs and outputs as they were: one written in place
  // since would give a silently wrong gradient.
  void check_versions() const {
    for (size_t i = 0; i < versions_.size(); ++i) {
      const bool is_input = i < inputs_.size();
      const Tensor& t = is_input ? inputs_[i] : outputs_[i - inputs_.size()];
      if (!t.defined() || t.version() == versions_[i]) continue;
      STRATA_FAIL(f_->rules.name.c_str(), is_input ? "input " : "output ",
                  is_input ? i : i - inputs_.size(), " (shape ", shape_string(t.sizes()),
                  "), saved for the vjp rule, was modified by an in-place op before the backward "
                  "pass; clone it before modifying it");
    }
  }

  FunctionPtr f_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  std::vector<uint32_t> versions_;
};

std::vector<Tensor> call_at_grad_level(const FunctionPtr& f, const std::vector<Tensor>& inputs,
                                       int64_t level) {
  autograd::EdgeList edges = autograd::gradient_edges(inputs, level);
  std::vector<Tensor> below = unwrap_all(inputs, level);
  std::vector<Tensor> outputs;
  {
    const BelowTopLayer below_layer;
    outputs = call(f, below);
  }
  std::vector<Tensor> wrapped = wrap_all(outputs, level);
  if (!autograd::any_tracked(edges)) return wrapped;
  auto node = make_intrusive<CustomNode>(f, std::move(edges), std::move(below), std::move(outputs));
  autograd::set_grad_fn(wrapped, node);
  return wrapped;
}

void check_tangents(const FunctionImpl& f, const std::vector<Tensor>& outputs,
                    const std::vector<Tensor>& tangents) {
  const char* what = f.rules.name.c_str();
  STRATA_CHECK(tangents.size() == outputs.size(), what, "the jvp rule returned ", tangents.size(),
               " tangents for ", outputs.size(), " outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = tangents[i];
    if (!t.defined()) continue;
    STRATA_CHECK(outputs[i].defined() && t.sizes() == outputs[i].sizes() &&
                     t.dtype() == outputs[i].dtype(),
                 what, "the jvp rule returned a tangent of shape ", shape_string(t.sizes()), " (",
                 to_string(t.dtype()), ") for output ", i,
                 outputs[i].defined() ? " of shape " + shape_string(outputs[i].sizes()) + " (" +
                                            to_string(outputs[i].dtype()) + ")"
                                      : std::string(", which is undefined"));
  }
}

std::vector<Tensor> call_at_jvp_level(const FunctionPtr& f, const std::vector<Tensor>& inputs,
                                      int64_t level) {
  std::vector<Tensor> tangents(inputs.size());
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (const TensorWrapper* w = wrapper_at_level(inputs[i], level)) tangents[i] = w->autograd().tangent;
    any = any || tangents[i].defined();
  }
  const std::vector<Tensor> primals = unwrap_all(inputs, level);
  std::vector<Tensor> outputs, output_tangents;
  {
    const BelowTopLayer below_layer;
    outputs = call(f, primals);
    if (any && f->rules.jvp) {
      for (size_t i = 0; i < primals.size(); ++i) {
        if (!tangents[i].defined() && primals[i].defined() && is_floating_point(primals[i].dtype()))
          tangents[i] = zeros_like(primals[i]);
      }
      output_tangents = f->rules.jvp(primals, tangents);
    } else if (any) {
      output_tangents = jvp_from_vjp(*f, primals, outputs, tangents);
    }
  }
  if (any) check_tangents(*f, outputs, output_tangents);
  std::vector<Tensor> wrapped = wrap_all(std::move(outputs), level);
  if (!any) return wrapped;
  for (size_t i = 0; i < wrapped.size(); ++i) {
    if (!wrapped[i].defined() || !is_floating_point(wrapped[i].dtype())) continue;
    as_wrapper(wrapped[i])->autograd().tangent = std::move(output_tangents[i]);
  }
  return wrapped;
}

std::vector<Tensor> call_at_vmap_level(const FunctionPtr& f, const std::vector<Tensor>& inputs,
                                       int64_t level) {
  std::vector<Tensor> values(inputs.size());
  BatchDims in_dims(inputs.size());
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    batching::BatchedArg arg = batching::unwrap(inputs[i], level);
    values[i] = std::move(arg.value);
    in_dims[i] = arg.bdim;
    any = any || arg.bdim.has_value();
  }
  std::vector<Tensor> outputs;
  BatchDims out_dims;
  {
    const BelowTopLayer below_layer;
    if (!any) return call(f, values);
    if (f->rules.vmap) {
      std::tie(outputs, out_dims) = f->rules.vmap(values, in_dims);
    } else {
      outputs = call(f->vmapped(in_dims), values);
      out_dims.assign(outputs.size(), int64_t{0});
    }
  }
  STRATA_CHECK(out_dims.size() == outputs.size(), f->rules.name.c_str(), "the vmap rule returned ",
               outputs.size(), " outputs but ", out_dims.size(), " out_dims");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !out_dims[i]) continue;
    const int64_t rank = outputs[i].dim();
    const int64_t d = *out_dims[i] < 0 ? *out_dims[i] + rank : *out_dims[i];
    STRATA_CHECK(d >= 0 && d < rank, f->rules.name.c_str(), "the vmap rule gave out_dim ",
                 *out_dims[i], " for output ", i, " of shape ", shape_string(outputs[i].sizes()));
    out_dims[i] = d;
  }
  std::vector<Tensor> result(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].defined()) result[i] = batching::make_batched(outputs[i], out_dims[i], level);
  }
  return result;
}

}  // namespace

std::vector<Tensor> call(const FunctionPtr& f, const std::vector<Tensor>& inputs) {
  if (layer_stack_empty()) return f->forward(inputs);
  const DynamicLayer& top = top_layer(f->rules.name.c_str());
  const int64_t level = top.level;
  switch (top.interpreter->kind()) {
    case TransformKind::Grad:
      if (f->rules.vjp) return call_at_grad_level(f, inputs, level);
      break;
    case TransformKind::Jvp:
      if (f->rules.jvp || f->rules.vjp) return call_at_jvp_level(f, inputs, level);
      break;
    case TransformKind::Vmap: return call_at_vmap_level(f, inputs, level);
    default: break;
  }
  return f->forward(inputs);
}

}  // namespace strata::custom

namespace strata {

CustomFunction::CustomFunction(CustomForward forward, CustomFunctionRules rules) {
  STRATA_CHECK(static_cast<bool>(forward), rules.name.c_str(), "the forward function is empty");
  auto impl = std::make_shared<custom::FunctionImpl>();
  impl->forward = std::move(forward);
  impl->rules = std::move(rules);
  impl_ = std::move(impl);
}

std::vector<Tensor> CustomFunction::operator()(const std::vector<Tensor>& inputs) const {
  return custom::call(impl_, inputs);
}

const std::string& CustomFunction::name() const { return impl_->rules.name; }

CustomFunction custom_function(CustomForward forward, CustomFunctionRules rules) {
  return CustomFunction(std::move(forward), std::move(rules));
}

}  // namespace strata
