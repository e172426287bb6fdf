#pragma once

#include <vector>

#include "transforms/higher_order_op.h"

// The control-flow operators' Trace implementations (Note [Control flow in
// graphs] in func/trace/higher_order_recording.cpp): one node with the
// functions as subgraphs, in real and in fake mode.

namespace strata::control_flow {

std::vector<Tensor> trace_cond(const HigherOrderOperator& op, const HopArgs& args);
std::vector<Tensor> trace_while_loop(const HigherOrderOperator& op, const HopArgs& args);
std::vector<Tensor> trace_scan(const HigherOrderOperator& op, const HopArgs& args);
std::vector<Tensor> trace_map(const HigherOrderOperator& op, const HopArgs& args);

}  // namespace strata::control_flow
