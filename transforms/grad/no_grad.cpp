// See Note [No grad inside a transform] in transforms/grad/no_grad.h.
#include "transforms/grad/no_grad.h"

#include <algorithm>

#include "transforms/layer_stack.h"

namespace strata {
namespace {

thread_local int64_t no_grad_through = 0;

}  // namespace

NoGradGuard::NoGradGuard() : previous_(no_grad_through) {
  const int64_t top = layer_stack_empty() ? 0 : top_layer("NoGradGuard").level;
  no_grad_through = std::max(previous_, top);
}

NoGradGuard::~NoGradGuard() { no_grad_through = previous_; }

int64_t autograd::no_grad_through_level() { return no_grad_through; }

}  // namespace strata
