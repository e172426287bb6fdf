#include "func/control_flow/traced_lowered.h"

#include <optional>
#include <string>

#include "func/control_flow/lanes.h"
#include "func/functionalize/functionalize_interpreter.h"
#include "ops/elementwise.h"
#include "tensor/error.h"
#include "transforms/functionalize/functional_tensor.h"
#include "transforms/layer_stack.h"
#include "transforms/vmap/batched_tensor.h"
#include "transforms/vmap/batching.h"
#include "transforms/vmap/vmap_interpreter.h"

// Note [Control flow traced inside vmap and functionalize]
// trace() records the ops that reach it below every transform, so a cond with
// a predicate that is the same for every sample, or a while_loop, called inside
// vmap or functionalize is recorded as one node on the values below the layers:
// - its operands are lowered: every vmap level's batch dim leading, in the
//   order of the layers (bottom first), an unbatched operand expanded to the
//   batch; a functionalized one as its current value;
// - each function becomes a function of such values: it raises its arguments
//   back to tensors of the running levels (batched at dim 0, new functional
//   roots), calls the user's function there, so that its ops are batched and
//   functionalized like any other, and lowers the results the same way. Both
//   branches' results and a loop's carry thus have one layout whatever runs;
// - the node's results are raised to the caller's levels.
// A while_loop whose predicate differs per sample is lowered with its per-lane
// meaning: the node's cond_fn asks whether any lane goes on, its body_fn runs
// the body on the lanes that do (Note [Untaken lanes do not poison
// derivatives]) and keeps the others' carry. A function that writes its
// arguments is refused (under functionalize eager code would write the
// caller's tensor, which a new root cannot). Under grad or jvp the node would
// need a derivative rule of its own, so those still refuse.

namespace strata::control_flow {

namespace {

struct Level {
  bool vmap;
  int64_t level;
  int64_t batch_size;
};

// The running layers, bottom first, as a lowering sees them.
class Lowering {
 public:
  Lowering(const HigherOrderOperator& op, const char* why) {
    for (size_t i = 0; i < layer_stack_depth(); ++i) {
      const DynamicLayer& layer = layer_at(i);
      const auto* vmap = dynamic_cast<const batching::VmapInterpreter*>(layer.interpreter.get());
      if (vmap == nullptr && layer.interpreter->kind() != TransformKind::Functionalize) {
        refuse_trace_under_transform(op, why);
      }
      levels_.push_back({vmap != nullptr, layer.level, vmap != nullptr ? vmap->batch_size() : 0});
    }
  }

  // f() with every running layer off the stack: ops on lowered values reach
  // no transform.
  template <class F>
  auto below_all(F&& f, size_t n = SIZE_MAX) const {
    if (n == SIZE_MAX) n = levels_.size();
    if (n == 0) return f();
    const BelowTopLayer below;
    return below_all(std::forward<F>(f), n - 1);
  }

  // t below every layer, each vmap level's batch dim leading; `expand` false
  // for a tensor batched at no level (a concrete predicate): no dims added.
  Tensor lower(const Tensor& t, bool expand) const {
    // Peeled from the top: each vmap level's batch dim, in its wrapper's value.
    std::vector<std::optional<int64_t>> bdims(levels_.size());
    Tensor value = t;
    for (size_t i = levels_.size(); i-- > 0;) {
      if (levels_[i].vmap) {
        const batching::BatchedArg arg = batching::unwrap(value, levels_[i].level);
        bdims[i] = arg.bdim;
        value = arg.value;
      } else if (auto* f = functionalization::functional_at_level(value, levels_[i].level)) {
        functionalization::sync_from_above(*f);
        value = f->value();
      }
    }
    return below_all([&] {
      int64_t lead = 0;
      for (size_t i = 0; i < levels_.size(); ++i) {
        if (!levels_[i].vmap || (!bdims[i] && !expand)) continue;
        if (bdims[i]) {
          value = value.movedim(lead + *bdims[i], lead);
        } else {
          std::vector<int64_t> sizes = value.sizes().vec();
          sizes.insert(sizes.begin() + lead, levels_[i].batch_size);
          value = value.unsqueeze(lead).expand(sizes);
        }
        ++lead;
      }
      return value;
    });
  }

  // A lowered value as a tensor of the running levels.
  Tensor raise(const Tensor& lowered) const {
    Tensor t = lowered;
    for (const Level& l : levels_) {
      t = l.vmap ? batching::make_batched(t, 0, l.level) : functionalization::make_functional(t, l.level);
    }
    return t;
  }

  std::vector<Tensor> lower_all(const std::vector<Tensor>& ts) const {
    std::vector<Tensor> out;
    out.reserve(ts.size());
    for (const Tensor& t : ts) out.push_back(lower(t, true));
    return out;
  }
  std::vector<Tensor> raise_all(const std::vector<Tensor>& ts) const {
    std::vector<Tensor> out;
    out.reserve(ts.size());
    for (const Tensor& t : ts) out.push_back(raise(t));
    return out;
  }

 private:
  std::vector<Level> levels_;
};

}  // namespace

std::vector<Tensor> trace_cond_below_transforms(const HigherOrderOperator& op, const HopArgs& args,
                                                const HigherOrderRecording& recording) {
  const Lowering lowering(op, "its predicate is the same for every sample, so one branch runs, and "
                              "under grad or jvp a recorded node would need a derivative rule");
  const char* name = op.name().c_str();
  const std::vector<Tensor> operands =
      lowering.lower_all({args.operands.begin() + 1, args.operands.end()});
  HopArgs lowered;
  lowered.operands.push_back(lowering.lower(args.operands.front(), false));
  lowered.operands.insert(lowered.operands.end(), operands.begin(), operands.end());
  lowered.attrs = args.attrs;
  auto lowered_fn = [&](const FlatFn& fn, const char* fn_name) {
    return FlatFn([&lowering, &fn, name, fn_name](const std::vector<Tensor>& values) {
      return lowering.lower_all(call_without_writes(name, fn_name, fn, lowering.raise_all(values),
                                                    {"operand"}, /*functionalized_too=*/true));
    });
  };
  TracedFn if_true = recording.trace("true_fn", lowered_fn(args.fns[0], "true_fn"), operands);
  TracedFn if_false = recording.trace("false_fn", lowered_fn(args.fns[1], "false_fn"), operands);
  check_same_leaves(name, "the branches' outputs", "true_fn", if_true.outputs, "false_fn",
                    if_false.outputs);
  const std::vector<ValueType> types = value_types_of(if_true.outputs);
  return lowering.raise_all(lowering.below_all([&] {
    return recording.finish(lowered, {std::move(if_true), std::move(if_false)}, types);
  }));
}

std::vector<Tensor> trace_while_loop_below_transforms(const HigherOrderOperator& op,
                                                      const HopArgs& args,
                                                      const HigherOrderRecording& recording) {
  const Lowering lowering(op, "the number of iterations is read from this run's values, and under "
                              "grad or jvp a recorded node would need a derivative rule");
  const char* name = op.name().c_str();
  const ArgNames names{"carry"};
  HopArgs lowered;
  lowered.operands = lowering.lower_all(args.operands);
  lowered.attrs = args.attrs;
  const FlatFn& cond_fn = args.fns[0];
  const FlatFn& body_fn = args.fns[1];
  bool per_lane = false;
  const FlatFn lowered_cond = [&](const std::vector<Tensor>& values) {
    const Tensor pred =
        predicate_of(name, call_without_writes(name, "cond_fn", cond_fn, lowering.raise_all(values),
                                               names, /*functionalized_too=*/true));
    per_lane = batched_at_any_level(pred);
    if (!per_lane) return std::vector<Tensor>{lowering.lower(pred, false)};
    // Whether any lane goes on.
    const Tensor lanes = lowering.lower(pred, true);
    return std::vector<Tensor>{lowering.below_all([&] { return lanes.sum() > 0.0; })};
  };
  const FlatFn lowered_body = [&](const std::vector<Tensor>& values) {
    const std::vector<Tensor> carry = lowering.raise_all(values);
    std::vector<Tensor> next;
    if (per_lane) {
      const Tensor pred = predicate_of(name, call_without_writes(name, "cond_fn", cond_fn, carry, names));
      next = select_lanes(pred, run_on_lanes(pred, true, name, "body_fn", body_fn, carry, names), carry);
    } else {
      next = call_without_writes(name, "body_fn", body_fn, carry, names, /*functionalized_too=*/true);
    }
    check_same_leaves(name, "the body's result and the carry", "the carry", carry, "body_fn", next);
    return lowering.lower_all(next);
  };
  TracedFn traced_cond = recording.trace("cond_fn", lowered_cond, lowered.operands);
  TracedFn traced_body = recording.trace("body_fn", lowered_body, lowered.operands);
  const std::vector<ValueType> types = value_types_of(lowered.operands);
  return lowering.raise_all(lowering.below_all([&] {
    return recording.finish(lowered, {std::move(traced_cond), std::move(traced_body)}, types);
  }));
}

}  // namespace strata::control_flow
