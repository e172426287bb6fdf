#include "transforms/tensor_wrapper.h"

#include <optional>

#include "dispatcher/dispatcher.h"
#include "transforms/grad/node.h"
#include "transforms/view_tracking.h"

namespace strata {
namespace {

// Unwraps this level's wrappers in place; returns the keys of what is left.
DispatchKeySet unwrap_arguments(Stack& stack, size_t first, int64_t level) {
  DispatchKeySet keys;
  auto unwrap = [&](Tensor& t) {
    if (TensorWrapper* w = wrapper_at_level(t, level)) t = w->value();
    if (t.defined()) keys |= t.key_set();
  };
  for_each_tensor_argument(stack, first, unwrap);
  return keys;
}

void wrap_results(Stack& stack, size_t first, int64_t level) {
  for_each_tensor_argument(stack, first, [level](Tensor& t) {
    if (t.defined()) t = wrap_at_level(std::move(t), level);
  });
}

}  // namespace

TensorWrapper::TensorWrapper(Tensor value, int64_t level)
    : TensorImpl(DispatchKeySet(autograd_key_for_backend(backend_key(value.device().type))),
                 value.dtype(), value.device()),
      value_(std::move(value)),
      level_(level) {
  refresh_metadata();
}

TensorWrapper::~TensorWrapper() = default;

void TensorWrapper::refresh_metadata() { copy_shape_from(*value_.impl()); }

Tensor wrap_at_level(Tensor value, int64_t level) {
  return Tensor(IntrusivePtr<TensorImpl>::adopt_new(new TensorWrapper(std::move(value), level)));
}

void call_below_wrapper_level(const OperatorHandle& op, Stack& stack, int64_t level) {
  const size_t first = stack.size() - op.schema().arguments().size();
  std::optional<size_t> written = op.entry().returned_argument_index();
  Tensor written_wrapper;
  if (written && wrapper_at_level(stack[first + *written].to_tensor(), level)) {
    written_wrapper = stack[first + *written].to_tensor();
  }
  const bool view = op.entry().returns_view();
  ViewCall view_call;
  if (view) view_call = capture_view_call(stack, first);
  call_below_top_layer(op, unwrap_arguments(stack, first, level), stack);
  if (written_wrapper.defined()) {
    TensorWrapper* target = static_cast<TensorWrapper*>(written_wrapper.impl());
    target->refresh_metadata();
    note_write(*target);
    for (size_t i = first; i < stack.size(); ++i) stack[i] = written_wrapper;
    return;
  }
  wrap_results(stack, first, level);
  if (view) set_view_origins(op, std::move(view_call), stack, first, level);
}

void WrapperInterpreter::send_to_next(const OperatorHandle& op, Stack& stack) {
  call_below_wrapper_level(op, stack, top_layer("grad or jvp").level);
}

}  // namespace strata
