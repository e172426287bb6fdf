#pragma once

#include <vector>

#include "tensor/tensor.h"
#include "transforms/higher_order_op.h"

// The control-flow higher-order operators on flat tensor lists (Note
// [Higher-order operators]); func/control_flow/control_flow.h is the typed
// front end over trees.

namespace strata::control_flow {

// strata::cond: operands {pred, x...}, fns {true_fn, false_fn}; returns the
// taken branch's results (per lane when pred is batched).
const HigherOrderOperator& cond_op();
// strata::while_loop: operands the carry, fns {cond_fn, body_fn}; returns the carry.
const HigherOrderOperator& while_loop_op();
// strata::scan: operands {carry..., xs...}, fns {step}, attrs {carry leaf count,
// reverse}; step maps {carry..., x...} to {carry..., y...}; returns {carry..., ys...}.
const HigherOrderOperator& scan_op();
// strata::map: operands xs, fns {f}; returns f's results for each x, stacked.
const HigherOrderOperator& map_op();

std::vector<Tensor> cond(const Tensor& pred, FlatFn true_fn, FlatFn false_fn,
                         std::vector<Tensor> operands);
std::vector<Tensor> while_loop(FlatFn cond_fn, FlatFn body_fn, std::vector<Tensor> init);
std::vector<Tensor> scan(FlatFn step, std::vector<Tensor> init, std::vector<Tensor> xs,
                         bool reverse);
std::vector<Tensor> map(FlatFn f, std::vector<Tensor> xs);

}  // namespace strata::control_flow
