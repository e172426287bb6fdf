#include "transforms/grad/grad_interpreter.h"

#include <optional>

#include "dispatcher/dispatcher.h"
#include "transforms/tensor_wrapper.h"

namespace strata::autograd {
namespace {

// Unwraps this level's wrappers in place; returns the keys of what is left.
DispatchKeySet unwrap_arguments(Stack& stack, size_t first, int64_t level) {
  DispatchKeySet keys;
  auto unwrap = [&](Tensor& t) {
    if (TensorWrapper* w = wrapper_at_level(t, level)) t = w->value();
    if (t.defined()) keys |= t.key_set();
  };
  for (size_t i = first; i < stack.size(); ++i) {
    IValue& arg = stack[i];
    if (arg.is_tensor()) {
      unwrap(arg.to_tensor());
    } else if (arg.is_tensor_list()) {
      for (Tensor& t : arg.to_tensor_list()) unwrap(t);
    }
  }
  return keys;
}

void wrap_results(Stack& stack, size_t first, int64_t level) {
  for (size_t i = first; i < stack.size(); ++i) {
    IValue& result = stack[i];
    if (result.is_tensor()) {
      Tensor& t = result.to_tensor();
      if (t.defined()) t = wrap_at_level(std::move(t), level);
    } else if (result.is_tensor_list()) {
      for (Tensor& t : result.to_tensor_list()) t = wrap_at_level(std::move(t), level);
    }
  }
}

}  // namespace

void GradInterpreter::send_to_next(const OperatorHandle& op, Stack& stack) {
  const int64_t level = top_layer("grad").level;
  const size_t first = stack.size() - op.schema().arguments().size();
  std::optional<size_t> written = op.entry().returned_argument_index();
  Tensor written_wrapper;
  if (written && wrapper_at_level(stack[first + *written].to_tensor(), level)) {
    written_wrapper = stack[first + *written].to_tensor();
  }
  call_below_top_layer(op, unwrap_arguments(stack, first, level), stack);
  if (written_wrapper.defined()) {
    static_cast<TensorWrapper*>(written_wrapper.impl())->refresh_metadata();
    for (size_t i = first; i < stack.size(); ++i) stack[i] = written_wrapper;
    return;
  }
  wrap_results(stack, first, level);
}

}  // namespace strata::autograd
