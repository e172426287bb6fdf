#pragma once

#include <vector>

#include "func/trace/higher_order_recording.h"

// cond with a predicate the same for every sample, and while_loop, recorded
// by trace() inside vmap, jvp and functionalize as one node on the values below
// the layers (Note [Control flow traced inside vmap and functionalize]); inside
// grad they refuse.

namespace strata::control_flow {

std::vector<Tensor> trace_cond_below_transforms(const HigherOrderOperator& op, const HopArgs& args,
                                                const HigherOrderRecording& recording);
std::vector<Tensor> trace_while_loop_below_transforms(const HigherOrderOperator& op,
                                                      const HopArgs& args,
                                                      const HigherOrderRecording& recording);

}  // namespace strata::control_flow
