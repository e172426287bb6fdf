#include "transforms/jvp/forward_call.h"

#include <vector>

#include "dispatcher/dispatcher.h"
#include "tensor/error.h"
#include "transforms/grad/derivative.h"
#include "transforms/layer_stack.h"
#include "transforms/tensor_wrapper.h"
#include "transforms/view_tracking.h"

// Note [Forward formulas]
// A jvp level's tensors are TensorWrappers whose AutogradMeta holds a tangent.
// An op called with a tangent at the level runs on the primals below the level
// (unwrapped and wrapped as for grad, by call_below_wrapper_level); then its
// forward formula computes the outputs' tangents from the primals, the outputs and the input
// tangents, with the jvp layer off the stack: tangents and primals are values
// of the level below, and an outer level transforms the formula like any code.
// Tangents of different levels never mix because each level keeps its own in
// its own wrappers. An in-place op replaces its target's tangent; its formula
// sees the target's value from before the write. A write through a view also
// overwrites the view's region of its base's tangent (Note [Views and in-place writes]).

namespace strata::forward {
namespace {

const Tensor& tangent_at(const Tensor& t, int64_t level) {
  static const Tensor kNone;
  const TensorWrapper* w = wrapper_at_level(t, level);
  return w != nullptr ? w->autograd().tangent : kNone;
}

// An in-place op with tangents among its inputs may only write into a tensor of
// this level (jvp gives a tangent only to tensors it owns), and through a view
// only when the view has a base at this level and its elements do not overlap.
void check_inplace_target(const OperatorHandle& op, const Tensor& self, int64_t level) {
  const TensorWrapper* here = wrapper_at_level(self, level);
  const char* name = op.operator_name().name.c_str();
  STRATA_CHECK(here != nullptr, name, "in-place operation on a tensor of shape ",
               shape_string(self.sizes()), " captured from outside jvp level ", level,
               ", with a tangent among its inputs; jvp cannot give a tangent to a tensor it does "
               "not own. Clone the tensor inside the function first");
  const ViewOrigin* view = here->autograd().view.get();
  if (view == nullptr) return;
  STRATA_CHECK(view->base.defined(), name, "in-place operation on a view of shape ",
               shape_string(self.sizes()), " of a tensor captured from outside jvp level ", level,
               ", with a tangent among its inputs; jvp cannot give a tangent to a tensor it does "
               "not own. Clone the tensor inside the function first");
  STRATA_CHECK(!view->may_overlap, name, "in-place operation on a view of shape ",
               shape_string(self.sizes()), " made by expand or as_strided, at jvp level ", level,
               " with a tangent among its inputs: its elements may share memory, so the write "
               "has no single region of its base to land in; apply the op out of place");
}

// After a write through `written`, a view: its base's tangent is the old one
// (zero if it had none) with the view's region replaced by the view's tangent.
void rebase_tangent(TensorWrapper& written) {
  TensorWrapper* base = view_base(written);
  if (base == nullptr) return;
  const Tensor& region_tangent = written.autograd().tangent;
  Tensor& base_tangent = base->autograd().tangent;
  if (!region_tangent.defined() && !base_tangent.defined()) return;
  const BelowTopLayer below;
  Tensor updated = base_tangent.defined() ? base_tangent : base->value().clone().zero_();
  if (region_tangent.defined()) {
    // Adding an exact zero made from the region's tangent (the sum of none of
    // its elements) gives the base tangent that tangent's batch dims, as under
    // jacfwd's vmap over tangents, and a fresh tensor to write into.
    updated = updated.add(region_tangent.flatten().narrow(0, 0, 0).sum());
  } else {
    // A copy: the old tangent may be the caller's, or shared with other views.
    updated = updated.clone();
  }
  Tensor region = replay_view(written.autograd().view->steps, updated);
  if (region_tangent.defined()) {
    region.copy_(region_tangent);
  } else {
    region.zero_();
  }
  base_tangent = std::move(updated);
}

// The arguments as the level below sees them, and their tangents. An in-place
// op's target, and anything sharing its memory, is kept as a copy taken before
// the op writes it.
void unwrap_arguments(const Stack& stack, size_t first, size_t nargs, int64_t level,
                      const StorageImpl* overwritten, Stack& primals, Stack& tangents) {
  primals.reserve(nargs);
  tangents.reserve(nargs);
  for (size_t i = first; i < first + nargs; ++i) {
    const IValue& a = stack[i];
    if (a.is_tensor()) {
      Tensor value = unwrap_at_level(a.to_tensor(), level);
      if (overwritten != nullptr && value.defined() &&
          value.impl()->underlying_storage() == overwritten) {
        const BelowTopLayer below;
        value = value.clone();
      }
      primals.emplace_back(std::move(value));
      tangents.emplace_back(tangent_at(a.to_tensor(), level));
    } else if (a.is_tensor_list()) {
      std::vector<Tensor> values, list_tangents;
      for (const Tensor& t : a.to_tensor_list()) {
        values.push_back(unwrap_at_level(t, level));
        list_tangents.push_back(tangent_at(t, level));
      }
      primals.emplace_back(std::move(values));
      tangents.emplace_back(std::move(list_tangents));
    } else {
      primals.push_back(a);
      tangents.emplace_back();
    }
  }
}

}  // namespace

bool any_tangent(const Stack& stack, size_t first, int64_t level) {
  return any_tensor_argument(stack, first,
                             [level](const Tensor& t) { return tangent_at(t, level).defined(); });
}

void forward_call(const OperatorHandle& op, const autograd::Derivative& derivative, int64_t level,
                  Stack& stack) {
  const size_t nargs = op.schema().arguments().size();
  const size_t first = stack.size() - nargs;
  refresh_stale_views(stack, first, level);
  if (!any_tangent(stack, first, level)) {
    call_below_wrapper_level(op, stack, level);
    return;
  }
  STRATA_CHECK(derivative.forward != nullptr, op.operator_name().to_string().c_str(),
               "has no forward-mode formula, and an input has a tangent at jvp level ", level, " (",
               describe_layer_stack(), "); register one as .forward in its Derivative");
  const std::optional<size_t> written = op.entry().returned_argument_index();
  const StorageImpl* overwritten = nullptr;
  if (written) {
    const Tensor& self = stack[first + *written].to_tensor();
    check_inplace_target(op, self, level);
    overwritten = self.impl()->underlying_storage();
  }
  Stack primals, tangents;
  unwrap_arguments(stack, first, nargs, level, overwritten, primals, tangents);
  call_below_wrapper_level(op, stack, level);

  autograd::ForwardOutputs outputs;
  SmallVector<TensorWrapper*, 2> wrappers;
  for (size_t i = first; i < stack.size(); ++i) {
    if (!stack[i].is_tensor()) continue;
    const Tensor& out = stack[i].to_tensor();
    wrappers.push_back(wrapper_at_level(out, level));
    outputs.push_back(unwrap_at_level(out, level));
  }
  autograd::ForwardOutputs output_tangents(outputs.size());
  {
    const BelowTopLayer below;
    autograd::ForwardContext context(op, primals, tangents, outputs, output_tangents);
    derivative.forward(context);
  }
  for (size_t i = 0; i < wrappers.size(); ++i) {
    TensorWrapper* w = wrappers[i];
    if (w == nullptr || !is_floating_point(w->dtype())) continue;
    w->autograd().tangent = std::move(output_tangents[i]);
  }
  if (written && !wrappers.empty() && wrappers[0] != nullptr) rebase_tangent(*wrappers[0]);
}

}  // namespace strata::forward
