#include "func/control_flow/control_flow_ops.h"
#include "func/control_flow/lanes.h"
#include "func/control_flow/traced.h"
#include "tensor/error.h"

namespace strata::control_flow {

namespace {

// Inline at every key (Note [Control flow runs inline under grad, jvp and vmap]).
// A per-lane predicate runs the body while any lane continues; finished lanes
// keep their carry. Inside a ShapesOnlyScope the carry is returned after one
// check of the predicate.
std::vector<Tensor> run_while_loop(const HigherOrderOperator& op, const HopArgs& args) {
  const FlatFn& cond_fn = args.fns[0];
  const FlatFn& body_fn = args.fns[1];
  const char* name = op.name().c_str();
  const ArgNames names{"carry"};
  std::vector<Tensor> carry = args.operands;
  while (true) {
    const Tensor pred = predicate_of(name, call_without_writes(name, "cond_fn", cond_fn, carry, names));
    if (ShapesOnlyScope::active()) return carry;
    const std::optional<bool> go_on = concrete_predicate(pred);
    if (go_on ? !*go_on : !any_lane(pred)) return carry;
    std::vector<Tensor> next = go_on ? call_without_writes(name, "body_fn", body_fn, carry, names)
                                     : run_on_lanes(pred, true, name, "body_fn", body_fn, carry, names);
    check_same_leaves(name, "the body's result and the carry", "the carry", carry, "body_fn",
                      next);
    carry = go_on ? std::move(next) : select_lanes(pred, next, carry);
  }
}

}  // namespace

const HigherOrderOperator& while_loop_op() {
  static HigherOrderOperator op("strata::while_loop");
  static const bool registered =
      (op.impl({HopKey::Backend, HopKey::Grad, HopKey::Jvp, HopKey::Vmap, HopKey::Functionalize}, &run_while_loop).impl(HopKey::Trace, &trace_while_loop), true);
  (void)registered;
  return op;
}

std::vector<Tensor> while_loop(FlatFn cond_fn, FlatFn body_fn, std::vector<Tensor> init) {
  HopArgs args;
  args.operands = std::move(init);
  args.fns = {std::move(cond_fn), std::move(body_fn)};
  return while_loop_op()(args);
}

}  // namespace strata::control_flow
