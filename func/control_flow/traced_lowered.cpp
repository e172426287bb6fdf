#include "func/control_flow/traced_lowered.h"

#include <optional>
#include <string>

#include "func/control_flow/lanes.h"
#include "func/functionalize/functionalize_interpreter.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "tensor/error.h"
#include "transforms/functionalize/functional_tensor.h"
#include "transforms/layer_stack.h"
#include "transforms/tensor_wrapper.h"
#include "transforms/vmap/batched_tensor.h"
#include "transforms/vmap/batching.h"
#include "transforms/vmap/vmap_interpreter.h"

// Note [Control flow traced inside vmap and functionalize]
// trace() records the ops that reach it below every transform, so a cond with
// a predicate that is the same for every sample, or a while_loop, called inside
// vmap, jvp or functionalize is recorded as one node on the values below the
// layers:
// - its operands are lowered: every vmap level's batch dim leading, in the
//   order of the layers (bottom first), an unbatched operand expanded to the
//   batch; a functionalized one as its current value; at a jvp level the
//   primal and the tangent (zeros for none) become two operands;
// - each function becomes a function of such values: it raises its arguments
//   back to tensors of the running levels (batched at dim 0, new functional
//   roots, duals), calls the user's function there, so that its ops are
//   batched, functionalized and pushed forward like any other, and lowers the
//   results the same way. Both branches' results and a loop's carry thus have
//   one layout whatever runs, and forward mode needs no rule of its own (the
//   node's functions compute primal and tangent together);
// - the node's results are raised to the caller's levels.
// A while_loop whose predicate differs per sample is lowered with its per-lane
// meaning: the node's cond_fn asks whether any lane goes on, its body_fn runs
// the body on the lanes that do (Note [Untaken lanes do not poison
// derivatives]) and keeps the others' carry. A function that writes its
// arguments is refused (under functionalize eager code would write the
// caller's tensor, which a new root cannot). Inside one grad level alone a
// cond is recorded with a backward of its own (Note [Control flow traced
// inside grad], traced_grad.cpp); a grad level among other layers refuses, and
// so does while_loop under grad (JAX defines no reverse mode through it).

namespace strata::control_flow {

namespace {

enum class Kind : uint8_t { Vmap, Jvp, Functionalize };

struct Level {
  Kind kind;
  int64_t level;
  int64_t batch_size;  // a vmap level's
};

// The running layers, bottom first, as a lowering sees them.
class Lowering {
 public:
  Lowering(const HigherOrderOperator& op, const char* why) {
    collect(op, why);
    for (const Level& l : levels_) parts_per_tensor_ *= l.kind == Kind::Jvp ? 2 : 1;
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

  // t below every layer: its parts (a jvp level's primal's parts, then its
  // tangent's), each with every vmap level's batch dim leading.
  std::vector<Tensor> lower(const Tensor& t) const { return lower(t, true); }
  // The primal part of a tensor batched at no level (a concrete predicate),
  // no dims added.
  Tensor lower_unbatched(const Tensor& t) const { return lower(t, false).front(); }

  // One tensor of the running levels from its parts at `next`.
  Tensor raise(const std::vector<Tensor>& parts, size_t& next, size_t n = SIZE_MAX) const {
    if (n == SIZE_MAX) n = levels_.size();
    if (n == 0) return parts.at(next++);
    const Level& l = levels_[n - 1];
    Tensor inner = raise(parts, next, n - 1);
    switch (l.kind) {
      case Kind::Vmap: return batching::make_batched(inner, 0, l.level);
      case Kind::Functionalize: return functionalization::make_functional(inner, l.level);
      case Kind::Jvp: {
        Tensor tangent = raise(parts, next, n - 1);
        Tensor dual = wrap_at_level(inner, l.level);
        if (is_floating_point(inner.dtype())) {
          static_cast<TensorWrapper*>(dual.impl())->autograd().tangent = std::move(tangent);
        }
        return dual;
      }
    }
    return inner;
  }

  std::vector<Tensor> lower_all(const std::vector<Tensor>& ts) const {
    std::vector<Tensor> out;
    out.reserve(ts.size() * parts_per_tensor_);
    for (const Tensor& t : ts) {
      for (Tensor& part : lower(t)) out.push_back(std::move(part));
    }
    return out;
  }
  std::vector<Tensor> raise_all(const std::vector<Tensor>& parts) const {
    std::vector<Tensor> out;
    out.reserve(parts.size() / parts_per_tensor_);
    for (size_t next = 0; next < parts.size();) out.push_back(raise(parts, next));
    return out;
  }

 private:
  // A part of a tensor being lowered: its value below the layers, its batch
  // dim at each vmap level, or (zero_of) a zero tangent shaped like that part.
  struct Part {
    Tensor value;
    std::vector<std::optional<int64_t>> bdims;
    std::optional<size_t> zero_of;
  };

  // The layers, read off the stack from the top (each popped while the ones
  // below are read).
  void collect(const HigherOrderOperator& op, const char* why) {
    if (layer_stack_empty()) return;
    const DynamicLayer& top = top_layer("control flow");
    const auto* vmap = dynamic_cast<const batching::VmapInterpreter*>(top.interpreter.get());
    const TransformKind kind = top.interpreter->kind();
    if (vmap == nullptr && kind != TransformKind::Functionalize && kind != TransformKind::Jvp) {
      refuse_trace_under_transform(op, why);
    }
    const Level level{vmap != nullptr ? Kind::Vmap : kind == TransformKind::Jvp ? Kind::Jvp : Kind::Functionalize,
                      top.level, vmap != nullptr ? vmap->batch_size() : 0};
    {
      const BelowTopLayer below;
      collect(op, why);
    }
    levels_.push_back(level);
  }

  // Appends the parts of t at the levels below the n-th.
  void peel(const Tensor& t, size_t n, std::vector<Part>& parts) const {
    if (n == 0) {
      parts.push_back({t, std::vector<std::optional<int64_t>>(levels_.size()), std::nullopt});
      return;
    }
    const Level& l = levels_[n - 1];
    const size_t first = parts.size();
    switch (l.kind) {
      case Kind::Vmap: {
        const batching::BatchedArg arg = batching::unwrap(t, l.level);
        peel(arg.value, n - 1, parts);
        for (size_t i = first; i < parts.size(); ++i) parts[i].bdims[n - 1] = arg.bdim;
        return;
      }
      case Kind::Functionalize: {
        Tensor value = t;
        if (auto* f = functionalization::functional_at_level(t, l.level)) {
          functionalization::sync_from_above(*f);
          value = f->value();
        }
        peel(value, n - 1, parts);
        return;
      }
      case Kind::Jvp: {
        const TensorWrapper* w = wrapper_at_level(t, l.level);
        peel(w != nullptr ? w->value() : t, n - 1, parts);
        const Tensor tangent = w != nullptr ? w->autograd().tangent : Tensor();
        if (tangent.defined()) {
          peel(tangent, n - 1, parts);
          return;
        }
        const size_t primal_parts = parts.size() - first;
        for (size_t i = first; i < first + primal_parts; ++i) parts.push_back({Tensor(), parts[i].bdims, i});
        return;
      }
    }
  }

  std::vector<Tensor> lower(const Tensor& t, bool expand) const {
    std::vector<Part> parts;
    peel(t, levels_.size(), parts);
    if (!expand) parts.resize(1);
    return below_all([&] {
      std::vector<Tensor> out;
      out.reserve(parts.size());
      for (const Part& part : parts) {
        out.push_back(part.zero_of ? zeros_like(out[*part.zero_of]) : leading_batch_dims(part, expand));
      }
      return out;
    });
  }

  // A part's value with every vmap level's batch dim leading, bottom level
  // first; an unbatched level expanded to the batch when `expand`.
  Tensor leading_batch_dims(const Part& part, bool expand) const {
    Tensor value = part.value;
    int64_t lead = 0;
    for (size_t i = 0; i < levels_.size(); ++i) {
      if (levels_[i].kind != Kind::Vmap || (!part.bdims[i] && !expand)) continue;
      if (part.bdims[i]) {
        value = value.movedim(lead + *part.bdims[i], lead);
      } else {
        std::vector<int64_t> sizes = value.sizes().vec();
        sizes.insert(sizes.begin() + lead, levels_[i].batch_size);
        value = value.unsqueeze(lead).expand(sizes);
      }
      ++lead;
    }
    return value;
  }

  size_t parts_per_tensor_ = 1;
  std::vector<Level> levels_;
};

}  // namespace

std::vector<Tensor> trace_cond_below_transforms(const HigherOrderOperator& op, const HopArgs& args,
                                                const HigherOrderRecording& recording) {
  const Lowering lowering(op, "its predicate is the same for every sample, so one branch runs; a "
                              "cond is recorded with its backward inside one grad level alone "
                              "(trace of grad, vjp or jacrev), not with other layers around it");
  const char* name = op.name().c_str();
  const std::vector<Tensor> operands =
      lowering.lower_all({args.operands.begin() + 1, args.operands.end()});
  HopArgs lowered;
  lowered.operands.push_back(lowering.lower_unbatched(args.operands.front()));
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
  const Lowering lowering(op, "the number of iterations is read from this run's values, and reverse "
                              "mode through a recorded while_loop is not defined (nor in JAX); a "
                              "loop of known length is a scan, which unrolls under grad");
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
    if (!per_lane) return std::vector<Tensor>{lowering.lower_unbatched(pred)};
    // Whether any lane goes on.
    const Tensor lanes = lowering.lower(pred).front();
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
