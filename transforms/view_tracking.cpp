#include "transforms/view_tracking.h"

#include <string_view>

#include "tensor/error.h"
#include "transforms/grad/node.h"

namespace strata {
namespace {

bool is_stale(const TensorWrapper& w) {
  const ViewOrigin* view = w.autograd().view.get();
  if (view == nullptr || !view->base.defined()) return false;
  return static_cast<const TensorWrapper*>(view->base.impl())->autograd().write_version !=
         view->base_version;
}

void refresh(TensorWrapper& w, int64_t level) {
  ViewOrigin& view = *w.autograd().view;
  TensorWrapper* base = static_cast<TensorWrapper*>(view.base.impl());
  const Tensor fresh = replay_view(view.steps, view.base);
  TensorWrapper* made = wrapper_at_level(fresh, level);
  STRATA_CHECK(made != nullptr, "view replay", "internal: replaying a view at level ", level,
               " did not give a tensor of that level");
  AutogradMeta& meta = w.autograd();
  meta.requires_grad = made->autograd().requires_grad;
  meta.grad_fn = made->autograd().grad_fn;
  meta.output_nr = made->autograd().output_nr;
  meta.tangent = made->autograd().tangent;
  view.base_version = base->autograd().write_version;
}

void refresh_if_stale(const Tensor& t, int64_t level) {
  TensorWrapper* w = wrapper_at_level(t, level);
  if (w != nullptr && is_stale(*w)) refresh(*w, level);
}

}  // namespace

bool view_may_overlap(const OperatorHandle& op) {
  const std::string_view name = op.operator_name().name;
  return name == "strata::expand" || name == "strata::as_strided";
}

TensorWrapper* view_base(const TensorWrapper& w) {
  const ViewOrigin* view = w.autograd().view.get();
  if (view == nullptr || !view->base.defined()) return nullptr;
  return static_cast<TensorWrapper*>(view->base.impl());
}

Tensor replay_view(const std::vector<ViewStep>& steps, Tensor base) {
  for (const ViewStep& step : steps) {
    Stack stack;
    stack.reserve(step.args.size() + 1);
    stack.emplace_back(std::move(base));
    stack.insert(stack.end(), step.args.begin(), step.args.end());
    step.op.call_boxed(stack);
    base = step.list_index < 0 ? stack[0].to_tensor()
                               : stack[0].to_tensor_list()[static_cast<size_t>(step.list_index)];
  }
  return base;
}

void refresh_stale_views(const Stack& stack, size_t first, int64_t level) {
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& arg = stack[i];
    if (arg.is_tensor()) {
      refresh_if_stale(arg.to_tensor(), level);
    } else if (arg.is_tensor_list()) {
      for (const Tensor& t : arg.to_tensor_list()) refresh_if_stale(t, level);
    }
  }
}

void refresh_stale_views(const std::vector<Tensor>& tensors, int64_t level) {
  for (const Tensor& t : tensors) refresh_if_stale(t, level);
}

ViewCall capture_view_call(const Stack& stack, size_t first) {
  ViewCall call{stack[first].to_tensor(), {}};
  call.args.assign(stack.begin() + static_cast<std::ptrdiff_t>(first) + 1, stack.end());
  return call;
}

void set_view_origins(const OperatorHandle& op, ViewCall call, Stack& stack, size_t first,
                      int64_t level) {
  const TensorWrapper* self = wrapper_at_level(call.self, level);
  const ViewOrigin* parent = self != nullptr ? self->autograd().view.get() : nullptr;
  auto origin_for = [&](int64_t list_index) {
    auto origin = std::make_unique<ViewOrigin>();
    if (self == nullptr) return origin;  // a view of a captured tensor: no base here
    if (parent != nullptr) {
      origin->base = parent->base;
      origin->steps = parent->steps;
      origin->base_version = parent->base_version;
      origin->may_overlap = parent->may_overlap;
    } else {
      origin->base = call.self;
      origin->base_version = self->autograd().write_version;
    }
    if (parent != nullptr && !parent->base.defined()) return origin;
    origin->steps.push_back({op, call.args, list_index});
    origin->may_overlap = origin->may_overlap || view_may_overlap(op);
    return origin;
  };
  for (size_t i = first; i < stack.size(); ++i) {
    IValue& result = stack[i];
    if (result.is_tensor()) {
      if (TensorWrapper* w = wrapper_at_level(result.to_tensor(), level)) {
        w->autograd().view = origin_for(-1);
      }
    } else if (result.is_tensor_list()) {
      const std::vector<Tensor>& outs = result.to_tensor_list();
      for (size_t k = 0; k < outs.size(); ++k) {
        if (TensorWrapper* w = wrapper_at_level(outs[k], level)) {
          w->autograd().view = origin_for(static_cast<int64_t>(k));
        }
      }
    }
  }
}

void note_write(TensorWrapper& target) {
  ViewOrigin* view = target.autograd().view.get();
  if (view == nullptr) {
    ++target.autograd().write_version;
    return;
  }
  if (!view->base.defined()) return;
  TensorWrapper* base = static_cast<TensorWrapper*>(view->base.impl());
  view->base_version = ++base->autograd().write_version;
}

}  // namespace strata
