#include "transforms/jvp/jvp_interpreter.h"

#include "transforms/tensor_wrapper.h"

namespace strata::forward {

void JvpInterpreter::send_to_next(const OperatorHandle& op, Stack& stack) {
  send_unwrapped_to_next(op, stack, top_layer("jvp").level);
}

}  // namespace strata::forward
