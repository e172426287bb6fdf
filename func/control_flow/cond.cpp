#include "func/control_flow/control_flow_ops.h"
#include "func/control_flow/lanes.h"
#include "func/control_flow/traced.h"

namespace strata::control_flow {

namespace {

// Note [Control flow runs inline under grad, jvp and vmap]
// Under grad, jvp and vmap a control-flow operator runs its functions at the
// transform's level, so every op in them reaches that level and is
// differentiated or batched like any other: the derivative of cond is the
// taken branch's, reverse mode through while_loop and scan keeps what each
// iteration's ops saved (every carry they need), and nesting works to any
// depth. The one data-dependent choice, the predicate, is concrete unless some
// vmap level batches it; then every function runs on every lane and the lanes
// are selected (Note [Untaken lanes do not poison derivatives]). Under
// functionalize they run inline too, so a write in a function is functionalized
// like any other. Under trace they are recorded as one node with subgraphs
// (traced.cpp).
std::vector<Tensor> run_cond(const HigherOrderOperator& op, const HopArgs& args) {
  const Tensor& pred = args.operands.front();
  check_predicate(pred, op.name().c_str(), "the predicate");
  const char* name = op.name().c_str();
  const ArgNames names{"operand"};
  const std::vector<Tensor> operands(args.operands.begin() + 1, args.operands.end());
  if (std::optional<bool> taken = concrete_predicate(pred)) {
    return call_without_writes(name, *taken ? "true_fn" : "false_fn", args.fns[*taken ? 0 : 1],
                               operands, names);
  }
  const std::vector<Tensor> if_true =
      run_on_lanes(pred, true, name, "true_fn", args.fns[0], operands, names);
  const std::vector<Tensor> if_false =
      run_on_lanes(pred, false, name, "false_fn", args.fns[1], operands, names);
  check_same_leaves(name, "the branches' outputs", "true_fn", if_true, "false_fn",
                    if_false);
  return select_lanes(pred, if_true, if_false);
}

}  // namespace

const HigherOrderOperator& cond_op() {
  static HigherOrderOperator op("strata::cond");
  static const bool registered =
      (op.impl({HopKey::Backend, HopKey::Grad, HopKey::Jvp, HopKey::Vmap, HopKey::Functionalize}, &run_cond).impl(HopKey::Trace, &trace_cond), true);
  (void)registered;
  return op;
}

std::vector<Tensor> cond(const Tensor& pred, FlatFn true_fn, FlatFn false_fn,
                         std::vector<Tensor> operands) {
  HopArgs args;
  args.operands.reserve(operands.size() + 1);
  args.operands.push_back(pred);
  for (Tensor& x : operands) args.operands.push_back(std::move(x));
  args.fns = {std::move(true_fn), std::move(false_fn)};
  return cond_op()(args);
}

}  // namespace strata::control_flow
