#include <sstream>

#include "dispatcher/library.h"
#include "tensor/error.h"
#include "transforms/grad/formula_node.h"
#include "transforms/grad/gradient_edge.h"
#include "transforms/grad/grad_interpreter.h"
#include "transforms/grad/no_grad.h"
#include "transforms/jvp/forward_call.h"
#include "transforms/tensor_wrapper.h"
#include "transforms/grad/view_write_node.h"
#include "transforms/view_tracking.h"

namespace strata::autograd {

namespace {

constexpr DispatchKeySet kBelowAutograd = DispatchKeySet::below(DispatchKey::AutogradCPU);

// The grad or jvp layer whose Autograd kernels are running.
const DynamicLayer& current_autodiff_layer(const char* op) {
  STRATA_CHECK(!layer_stack_empty(), op,
               "got a tensor of a grad or jvp transform that has already returned; return the "
               "tensor from the function being transformed instead of keeping it");
  const DynamicLayer& top = top_layer(op);
  const TransformKind kind = top.interpreter->kind();
  STRATA_CHECK(kind == TransformKind::Grad || kind == TransformKind::Jvp, op,
               "internal: Autograd kernel reached with ", describe_layer_stack(), " on top");
  return top;
}

std::string argument_description(const OperatorHandle& op, size_t arg, const Tensor& t) {
  std::ostringstream out;
  out << "argument '" << op.schema().arguments()[arg].name << "' (shape " << shape_string(t.sizes())
      << ", " << to_string(t.dtype()) << ")";
  return out.str();
}

bool requires_grad_at(const Tensor& t, int64_t level) {
  const TensorWrapper* w = wrapper_at_level(t, level);
  return w != nullptr && w->autograd().requires_grad;
}

// Whether the call has anything to record: checked before any bookkeeping, since
// most calls under grad involve only constants (factories, indices, masks).
// Under a NoGradGuard made inside this level's function nothing is recorded
// (Note [No grad inside a transform]).
bool any_input_requires_grad(const Stack& stack, size_t first, int64_t level) {
  if (level <= no_grad_through_level()) return false;
  return any_tensor_argument(stack, first,
                             [level](const Tensor& t) { return requires_grad_at(t, level); });
}

// The tensor slots of the call (each tensor argument, each element of a tensor
// list): their shapes, and the edges their gradients flow along.
void collect_slots(const Stack& stack, size_t first, size_t nargs, int64_t level,
                   RecordedCall& call, EdgeList& edges) {
  call.first_slot.resize(nargs, FormulaNode::kNoSlot);
  call.slots.reserve(nargs);
  edges.reserve(nargs);
  auto add = [&](const Tensor& t, size_t arg) {
    TensorMeta& meta = call.slots.emplace_back();
    Edge& edge = edges.emplace_back();
    if (!t.defined()) return;
    meta.sizes = DimVector(t.sizes());
    meta.dtype = t.dtype();
    meta.device = t.device();
    if (requires_grad_at(t, level)) {
      meta.needs_grad = true;
      edge = gradient_edge(wrapper_at_level(t, level)->autograd());
      if (arg < 32) call.needs_grad_args |= uint32_t{1} << arg;
    }
  };
  for (size_t i = 0; i < nargs; ++i) {
    const IValue& arg = stack[first + i];
    if (arg.is_tensor()) {
      call.first_slot[i] = static_cast<uint16_t>(call.slots.size());
      add(arg.to_tensor(), i);
    } else if (arg.is_tensor_list()) {
      call.first_slot[i] = static_cast<uint16_t>(call.slots.size());
      for (const Tensor& t : arg.to_tensor_list()) add(t, i);
    }
  }
}

// An in-place op may only write into a tensor of this level, or a constant when
// nothing involved is being differentiated.
void check_inplace_target(const OperatorHandle& op, const Tensor& self, size_t arg, int64_t level,
                          bool any_requires_grad) {
  TensorWrapper* here = wrapper_at_level(self, level);
  if (here == nullptr) {
    TensorWrapper* outer = as_wrapper(self);
    const bool outer_tracked = outer != nullptr && outer->autograd().requires_grad;
    STRATA_CHECK(!any_requires_grad && !outer_tracked, op.operator_name().to_string().c_str(),
                 "in-place operation on ", argument_description(op, arg, self),
                 ", a tensor captured from outside grad level ", level,
                 outer_tracked ? " that requires grad at an outer level" : "",
                 "; grad cannot record a mutation of a tensor it does not own. "
                 "Clone the tensor inside the function first");
    return;
  }
  const ViewOrigin* view = here->autograd().view.get();
  if (view == nullptr || !any_requires_grad) return;
  STRATA_CHECK(view->base.defined(), op.operator_name().to_string().c_str(),
               "in-place operation on ", argument_description(op, arg, self),
               ", a view of a tensor captured from outside grad level ", level,
               "; grad cannot record a mutation of a tensor it does not own. Clone the tensor "
               "inside the function first");
  STRATA_CHECK(!view->may_overlap, op.operator_name().to_string().c_str(), "in-place operation on ",
               argument_description(op, arg, self), ", a view made by expand or as_strided, at grad level ",
               level, ": its elements may share memory, so the write has no single region of its "
               "base to land in; apply the op out of place");
}

// What the formula reads, as the level below sees it, taken before the op runs:
// an in-place op's target, and anything sharing its memory, is saved as a copy.
void save_arguments(const Stack& stack, size_t first, size_t nargs, uint32_t saved_inputs,
                    int64_t level, std::optional<size_t> written, RecordedCall& call) {
  const StorageImpl* overwritten = nullptr;
  if (written) overwritten = stack[first + *written].to_tensor().impl()->underlying_storage();
  auto& saved = call.args;
  saved.reserve(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const IValue& a = stack[first + i];
    const bool keep = saved_inputs >> i & 1u;
    if (a.is_tensor() && keep) {
      Tensor value = unwrap_at_level(a.to_tensor(), level);
      const bool aliases_target = overwritten != nullptr && value.defined() &&
                                  value.impl()->underlying_storage() == overwritten;
      // The clone runs through this level's back fallback, which wraps it here;
      // the node keeps what is below.
      saved.emplace_back(aliases_target ? unwrap_at_level(value.clone(), level) : value);
    } else if (a.is_tensor_list() && keep) {
      std::vector<Tensor> values = a.to_tensor_list();
      for (Tensor& t : values) t = unwrap_at_level(t, level);
      saved.emplace_back(std::move(values));
    } else if (a.is_tensor() || a.is_tensor_list()) {
      saved.emplace_back();  // not read by the formula: only its shape is kept (in the slots)
    } else {
      saved.emplace_back(a);
    }
  }
}

// The results of the call (tensors, then tensor-list elements) with their
// wrappers at this level, keeping the values the formula reads.
void collect_outputs(const Stack& stack, size_t first, uint32_t saved_outputs, int64_t level,
                     SmallVector<TensorWrapper*, 4>& wrappers, RecordedCall& call) {
  auto add = [&](const Tensor& out, bool keep) {
    TensorWrapper* w = wrapper_at_level(out, level);
    wrappers.push_back(w);
    OutputInfo& info = call.outputs.emplace_back();
    info.meta.sizes = DimVector(out.sizes());
    info.meta.dtype = out.dtype();
    info.meta.device = out.device();
    if (keep && w) info.saved = w->value();
  };
  for (size_t i = first; i < stack.size(); ++i) {
    if (stack[i].is_tensor()) add(stack[i].to_tensor(), saved_outputs >> (i - first) & 1u);
  }
  for (size_t i = first; i < stack.size(); ++i) {
    if (!stack[i].is_tensor_list()) continue;
    for (const Tensor& out : stack[i].to_tensor_list()) add(out, false);
  }
}

// The Autograd kernel of an op with a Derivative: runs the op and, when an input
// requires grad at this level, records a FormulaNode as its outputs' grad_fn.

void record(const OperatorHandle& op, const Derivative& derivative, int64_t level, Stack& stack) {
  const size_t nargs = op.schema().arguments().size();
  const size_t first = stack.size() - nargs;
  refresh_stale_views(stack, first, level);
  const bool tracked = any_input_requires_grad(stack, first, level);
  const std::optional<size_t> written = op.entry().returned_argument_index();
  if (written) {
    check_inplace_target(op, stack[first + *written].to_tensor(), *written, level, tracked);
  }
  if (!tracked) {
    call_below_wrapper_level(op, stack, level);
    return;
  }
  auto node = make_intrusive<FormulaNode>(op, derivative, level);
  RecordedCall& call = node->call();
  collect_slots(stack, first, nargs, level, call, node->mutable_next_edges());
  save_arguments(stack, first, nargs, derivative.saved_inputs, level, written, call);
  call_below_wrapper_level(op, stack, level);
  SmallVector<TensorWrapper*, 4> output_wrappers;
  collect_outputs(stack, first, derivative.saved_outputs, level, output_wrappers, call);
  node->seal();
  for (size_t i = 0; i < output_wrappers.size(); ++i) {
    TensorWrapper* w = output_wrappers[i];
    if (w == nullptr || !is_floating_point(w->dtype())) continue;
    AutogradMeta& meta = w->autograd();
    meta.requires_grad = true;
    meta.grad_fn = node;
    meta.output_nr = static_cast<uint32_t>(i);
  }
  if (written && !output_wrappers.empty() && output_wrappers[0] != nullptr) {
    rebase_history(*output_wrappers[0]);
  }
}

// An op without a formula may run under grad or jvp as long as nothing it
// returns would need a gradient or a tangent (comparisons, argmax, integer ops).
void no_formula_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  const DynamicLayer& top = current_autodiff_layer(op.operator_name().name.c_str());
  const bool jvp = top.interpreter->kind() == TransformKind::Jvp;
  const size_t first = stack.size() - op.schema().arguments().size();
  const bool involved = jvp ? forward::any_tangent(stack, first, top.level)
                            : any_input_requires_grad(stack, first, top.level);
  op.redispatch_boxed(keys & kBelowAutograd, stack);
  if (!involved) return;
  for (size_t i = first; i < stack.size(); ++i) {
    if (!stack[i].is_tensor()) continue;
    STRATA_CHECK(
        !is_floating_point(stack[i].to_tensor().dtype()), op.operator_name().to_string().c_str(),
        "has no derivative formula, and ",
        jvp ? "an input has a tangent at jvp level " : "its inputs require grad at grad level ",
        top.level, " (", describe_layer_stack(), "); register one at the Autograd key");
  }
}

void non_differentiable_kernel(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  op.redispatch_boxed(keys & kBelowAutograd, stack);
}

STRATA_LIBRARY_IMPL(_, AutogradCPU, m) {
  m.fallback(KernelFunction::from_boxed(&no_formula_fallback));
}
STRATA_LIBRARY_IMPL(_, AutogradCUDA, m) {
  m.fallback(KernelFunction::from_boxed(&no_formula_fallback));
}

}  // namespace

KernelFunction derivative(Derivative d) {
  return KernelFunction::from_boxed_functor(
      [d](const OperatorHandle& op, DispatchKeySet, Stack& stack) {
        const DynamicLayer& top = current_autodiff_layer(op.operator_name().name.c_str());
        if (top.interpreter->kind() == TransformKind::Jvp) {
          forward::forward_call(op, d, top.level, stack);
        } else {
          record(op, d, top.level, stack);
        }
      });
}

KernelFunction non_differentiable() {
  return KernelFunction::from_boxed(&non_differentiable_kernel);
}

}  // namespace strata::autograd
