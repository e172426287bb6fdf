#pragma once

#include <cstdint>

#include "dispatcher/ivalue.h"

namespace strata {
class OperatorHandle;
namespace autograd {
struct Derivative;
}
}  // namespace strata

namespace strata::forward {

// The Autograd kernel of an op with a Derivative, at jvp level `level`: runs the
// op on the primals and, when an argument has a tangent at this level, its
// forward formula for the outputs' tangents.
void forward_call(const OperatorHandle& op, const autograd::Derivative& derivative, int64_t level,
                  Stack& stack);

// Whether a tensor argument among stack[first...] has a tangent at jvp level `level`.
bool any_tangent(const Stack& stack, size_t first, int64_t level);

}  // namespace strata::forward
