#include "func/control_flow/traced.h"

#include "func/control_flow/lanes.h"
#include "func/control_flow/traced_lowered.h"
#include "func/trace/higher_order_recording.h"
#include "tensor/error.h"
#include "transforms/layer_stack.h"

// Under trace() with no transform running, each operator traces its functions
// on example arguments and records one node. Inside a transform the recording
// sees the transform's ops, not the call: scan and map then run inline, as
// their ops do not depend on data (the graph unrolls the steps); cond runs
// inline when its predicate is per lane (both branches run and where() selects,
// whatever the data); a concrete predicate or a loop's trip count would be this
// run's choice, so those record one node on the values below the layers
// (traced_lowered.cpp), inside vmap, jvp and functionalize; a cond inside
// one grad level records its backward as a cond too (traced_grad.cpp); a
// while_loop inside grad refuses.

namespace strata::control_flow {

namespace {

// The call's results when the trace does not record it, or nullopt.
std::optional<std::vector<Tensor>> run_unrecorded(const HigherOrderOperator& op,
                                                  const HopArgs& args,
                                                  const HigherOrderRecording& recording) {
  if (!recording.recording()) return op.call(inline_hop_key(), args);
  return std::nullopt;
}

ValueType stacked(ValueType type, int64_t length) {
  DimVector sizes;
  sizes.push_back(length);
  for (int64_t s : type.sizes) sizes.push_back(s);
  type.sizes = sizes;
  return type;
}

}  // namespace

std::vector<Tensor> trace_cond(const HigherOrderOperator& op, const HopArgs& args) {
  const HigherOrderRecording recording(op);
  if (auto out = run_unrecorded(op, args, recording)) return *out;
  const Tensor& pred = args.operands.front();
  check_predicate(pred, op.name().c_str(), "the predicate");
  if (!layer_stack_empty()) {
    if (batched_at_any_level(pred)) return op.call(inline_hop_key(), args);
    if (traced_under_one_grad()) return trace_cond_under_grad(op, args, recording);
    return trace_cond_below_transforms(op, args, recording);
  }
  const std::vector<Tensor> operands(args.operands.begin() + 1, args.operands.end());
  TracedFn if_true = recording.trace("true_fn", args.fns[0], operands);
  TracedFn if_false = recording.trace("false_fn", args.fns[1], operands);
  check_same_leaves(op.name().c_str(), "the branches' outputs", "true_fn", if_true.outputs,
                    "false_fn", if_false.outputs);
  const std::vector<ValueType> types = value_types_of(if_true.outputs);
  return recording.finish(args, {std::move(if_true), std::move(if_false)}, types);
}

std::vector<Tensor> trace_while_loop(const HigherOrderOperator& op, const HopArgs& args) {
  const HigherOrderRecording recording(op);
  if (auto out = run_unrecorded(op, args, recording)) return *out;
  if (!layer_stack_empty()) return trace_while_loop_below_transforms(op, args, recording);
  TracedFn cond_fn = recording.trace("cond_fn", args.fns[0], args.operands);
  predicate_of(op.name().c_str(), cond_fn.outputs);
  TracedFn body_fn = recording.trace("body_fn", args.fns[1], args.operands);
  check_same_leaves(op.name().c_str(), "the body's result and the carry", "the carry",
                    args.operands, "body_fn", body_fn.outputs);
  return recording.finish(args, {std::move(cond_fn), std::move(body_fn)},
                          value_types_of(args.operands));
}

std::vector<Tensor> trace_scan(const HigherOrderOperator& op, const HopArgs& args) {
  const HigherOrderRecording recording(op);
  if (auto out = run_unrecorded(op, args, recording)) return *out;
  if (!layer_stack_empty()) return op.call(inline_hop_key(), args);
  const auto carry_leaves = static_cast<size_t>(args.attrs.at(0));
  const std::vector<Tensor> carry(args.operands.begin(), args.operands.begin() + carry_leaves);
  const std::vector<Tensor> xs(args.operands.begin() + carry_leaves, args.operands.end());
  const int64_t length = scan_length(op.name().c_str(), xs);
  std::vector<Tensor> step_args = carry;
  for (Tensor& x : recording.unrecorded([&] { return example_slices(xs); })) step_args.push_back(std::move(x));
  TracedFn step = recording.trace("step", args.fns[0], step_args, /*without_data=*/length == 0);
  STRATA_CHECK(step.outputs.size() >= carry.size(), op.name().c_str(), "step returned ",
               step.outputs.size(), " tensor leaves, fewer than the carry's ", carry.size());
  const std::vector<Tensor> next(step.outputs.begin(), step.outputs.begin() + carry_leaves);
  check_same_leaves(op.name().c_str(), "the step's carry and the carry", "the carry", carry, "step",
                    next);
  std::vector<ValueType> types = value_types_of(carry);
  for (size_t i = carry_leaves; i < step.outputs.size(); ++i) {
    types.push_back(stacked(value_type_of(step.outputs[i]), length));
  }
  return recording.finish(args, {std::move(step)}, types);
}

std::vector<Tensor> trace_map(const HigherOrderOperator& op, const HopArgs& args) {
  const HigherOrderRecording recording(op);
  if (auto out = run_unrecorded(op, args, recording)) return *out;
  if (!layer_stack_empty()) return op.call(inline_hop_key(), args);
  const int64_t length = scan_length(op.name().c_str(), args.operands);
  TracedFn f = recording.trace("f", args.fns[0],
                               recording.unrecorded([&] { return example_slices(args.operands); }),
                               /*without_data=*/length == 0);
  std::vector<ValueType> types;
  for (const Tensor& y : f.outputs) types.push_back(stacked(value_type_of(y), length));
  return recording.finish(args, {std::move(f)}, types);
}

}  // namespace strata::control_flow
