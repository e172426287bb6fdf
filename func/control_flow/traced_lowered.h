#pragma once

#include <vector>

#include "func/trace/higher_order_recording.h"

// cond with a predicate the same for every sample, and while_loop, recorded
// by trace() inside vmap, jvp and functionalize as one node on the values below
// the layers (Note [Control flow traced inside vmap and functionalize]); cond
// inside one grad level records its backward too; while_loop inside grad
// refuses.

namespace strata::control_flow {

std::vector<Tensor> trace_cond_below_transforms(const HigherOrderOperator& op, const HopArgs& args,
                                                const HigherOrderRecording& recording);
// Whether the only layer running is a grad level (trace of grad, vjp, jacrev).
bool traced_under_one_grad();
// cond with a concrete predicate recorded inside one grad level, with a
// backward that is a cond of the branches' vjps (Note [Control flow traced
// inside grad], traced_grad.cpp).
std::vector<Tensor> trace_cond_under_grad(const HigherOrderOperator& op, const HopArgs& args,
                                          const HigherOrderRecording& recording);

std::vector<Tensor> trace_while_loop_below_transforms(const HigherOrderOperator& op,
                                                      const HopArgs& args,
                                                      const HigherOrderRecording& recording);

}  // namespace strata::control_flow
