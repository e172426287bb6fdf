#include "transforms/grad/grad_interpreter.h"

#include "transforms/tensor_wrapper.h"

namespace strata::autograd {

void GradInterpreter::send_to_next(const OperatorHandle& op, Stack& stack) {
  send_unwrapped_to_next(op, stack, top_layer("grad").level);
}

}  // namespace strata::autograd
