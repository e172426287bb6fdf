#include <string>

#include "func/control_flow/control_flow_ops.h"
#include "func/control_flow/lanes.h"
#include "func/control_flow/traced.h"
#include "func/trace/higher_order_recording.h"
#include "func/trace/recorder.h"
#include "ops/creation.h"
#include "ops/shape.h"
#include "tensor/error.h"
#include "transforms/layer_stack.h"

namespace strata::control_flow {

namespace {
thread_local int shapes_only_depth = 0;
}  // namespace

ShapesOnlyScope::ShapesOnlyScope() { ++shapes_only_depth; }
ShapesOnlyScope::~ShapesOnlyScope() { --shapes_only_depth; }
bool ShapesOnlyScope::active() { return shapes_only_depth > 0; }

int64_t scan_length(const char* op, const std::vector<Tensor>& xs) {
  STRATA_CHECK(!xs.empty(), op, "xs has no tensor leaves, so the number of steps is unknown");
  for (size_t i = 0; i < xs.size(); ++i) {
    STRATA_CHECK(xs[i].dim() >= 1, op, "xs leaf ", i, " is 0-dim; each leaf is scanned over dim 0");
    STRATA_CHECK(xs[i].sizes()[0] == xs[0].sizes()[0], op, "xs leaves differ in length: leaf 0 has ",
                 xs[0].sizes()[0], " steps (shape ", shape_string(xs[0].sizes()), "), leaf ", i,
                 " has ", xs[i].sizes()[0], " (shape ", shape_string(xs[i].sizes()), ")");
  }
  return xs[0].sizes()[0];
}

std::vector<Tensor> example_slices(const std::vector<Tensor>& xs) {
  std::vector<Tensor> slices;
  slices.reserve(xs.size());
  for (const Tensor& x : xs) {
    if (x.sizes()[0] > 0) {
      slices.push_back(x.select(0, 0));
      continue;
    }
    // A sum over the empty dim: zeros of a slice's shape at every level of x.
    Tensor zero = x.sum({0});
    slices.push_back(zero.dtype() == x.dtype() ? zero : zero.to(x.dtype()));
  }
  return slices;
}

namespace {

void append_step(std::vector<Tensor>& args, const std::vector<Tensor>& xs, int64_t t) {
  for (const Tensor& x : xs) args.push_back(x.select(0, t));
}

// Note [A length-0 scan runs no step]
// Over a length-0 dim scan and map return the initial carry and ys of length
// 0 whose shapes and dtypes are those of one step's results (as jax.lax.scan
// traces its step once whatever the length). Outside every transform the step
// runs once on fakes with a fake-mode trace pushed (TraceMode::Fake, Note
// [Fake tensors]): each op runs its shape function, so no data is computed,
// and a control-flow operator inside the step is recorded as one node (its
// functions traced once), so a while_loop never iterates. A step that needs
// data there (an item()) raises an error naming the operator and saying why.
// Under trace() the step is traced on fakes likewise (HigherOrderRecording::
// trace). Inside a transform a mode pushed now would not see the ops below
// the layers (each layer restores the dispatch keys it was entered with), so
// the step runs on zeros of a slice's shape, with every while_loop inside it
// returning its initial carry after one call of cond_fn (a ShapesOnlyScope):
// a loop that would never end on zeros cannot hang, and the results' shapes
// are the carry's whatever the trip count.
std::vector<Tensor> run_without_data(const char* op, const char* fn_name, const FlatFn& fn,
                                     const std::vector<Tensor>& args, const ArgNames& names) {
  if (!layer_stack_empty()) {
    const ShapesOnlyScope shapes_only;
    return call_without_writes(op, fn_name, fn, args, names);
  }
  TraceOptions options;
  options.mode = TraceMode::Fake;
  GraphRecorder recorder(options);
  const DispatchModeGuard guard(recorder.unowned());
  std::vector<Tensor> fakes;
  fakes.reserve(args.size());
  for (const Tensor& a : args) fakes.push_back(recorder.add_input(a));
  try {
    return call_without_writes(op, fn_name, fn, fakes, names);
  } catch (const Error& e) {
    fail_needs_data(op, fn_name, e);
  }
}

// Results of length 0 shaped like `example` stacked along a new dim 0
// (made after the fake evaluation: only their sizes and dtypes are read).
std::vector<Tensor> no_steps(const std::vector<Tensor>& example) {
  std::vector<Tensor> stacked;
  stacked.reserve(example.size());
  for (const Tensor& y : example) {
    DimVector sizes;
    sizes.push_back(0);
    for (int64_t s : y.sizes()) sizes.push_back(s);
    stacked.push_back(empty(sizes, y.dtype(), y.device()));
  }
  return stacked;
}

// Each step's results stacked along a new dim 0, in step order; `ys[t]` holds step t's.
std::vector<Tensor> stack_steps(const char* op, const std::vector<std::vector<Tensor>>& ys) {
  std::vector<Tensor> stacked;
  for (size_t t = 1; t < ys.size(); ++t) {
    const std::string other = "step " + std::to_string(t);
    check_same_leaves(op, "the steps' outputs", "step 0", ys[0], other.c_str(), ys[t]);
  }
  for (size_t leaf = 0; leaf < ys[0].size(); ++leaf) {
    std::vector<Tensor> parts;
    parts.reserve(ys.size());
    for (const auto& step : ys) parts.push_back(step[leaf]);
    stacked.push_back(stack(parts, 0));
  }
  return stacked;
}

// Throws unless a step's results begin with a new carry like `carry`.
void check_step_carry(const char* name, const std::vector<Tensor>& carry,
                      const std::vector<Tensor>& out) {
  STRATA_CHECK(out.size() >= carry.size(), name, "step returned ", out.size(),
               " tensor leaves, fewer than the carry's ", carry.size());
  const std::vector<Tensor> next(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(carry.size()));
  check_same_leaves(name, "the step's carry and the carry", "the carry", carry, "step", next);
}

// Inline at every key (Note [Control flow runs inline under grad, jvp and vmap]).
// Over a length-0 dim: Note [A length-0 scan runs no step].
std::vector<Tensor> run_scan(const HigherOrderOperator& op, const HopArgs& args) {
  const char* name = op.name().c_str();
  const auto carry_leaves = static_cast<size_t>(args.attrs.at(0));
  const bool reverse = args.attrs.at(1) != 0;
  std::vector<Tensor> carry(args.operands.begin(), args.operands.begin() + carry_leaves);
  const std::vector<Tensor> xs(args.operands.begin() + carry_leaves, args.operands.end());
  const int64_t length = scan_length(name, xs);
  if (length == 0) {
    std::vector<Tensor> step_args = carry;
    for (Tensor& x : example_slices(xs)) step_args.push_back(std::move(x));
    const std::vector<Tensor> out =
        run_without_data(name, "step", args.fns[0], step_args, {"carry", carry_leaves, "xs"});
    check_step_carry(name, carry, out);
    std::vector<Tensor> result = std::move(carry);
    const std::vector<Tensor> ys(out.begin() + static_cast<std::ptrdiff_t>(carry_leaves), out.end());
    for (Tensor& y : no_steps(ys)) result.push_back(std::move(y));
    return result;
  }
  std::vector<std::vector<Tensor>> ys(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) {
    const int64_t t = reverse ? length - 1 - i : i;
    std::vector<Tensor> step_args = carry;
    append_step(step_args, xs, t);
    std::vector<Tensor> out =
        call_without_writes(name, "step", args.fns[0], step_args, {"carry", carry_leaves, "xs"});
    check_step_carry(name, carry, out);
    carry.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(carry_leaves));
    ys[static_cast<size_t>(t)].assign(out.begin() + carry_leaves, out.end());
  }
  std::vector<Tensor> result = std::move(carry);
  for (Tensor& y : stack_steps(name, ys)) result.push_back(std::move(y));
  return result;
}

std::vector<Tensor> run_map(const HigherOrderOperator& op, const HopArgs& args) {
  const char* name = op.name().c_str();
  const int64_t length = scan_length(name, args.operands);
  if (length == 0) {
    return no_steps(run_without_data(name, "f", args.fns[0], example_slices(args.operands), {"xs"}));
  }
  std::vector<std::vector<Tensor>> ys;
  ys.reserve(static_cast<size_t>(length));
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> step_args;
    append_step(step_args, args.operands, t);
    ys.push_back(call_without_writes(name, "f", args.fns[0], step_args, {"xs"}));
  }
  return stack_steps(name, ys);
}

constexpr std::initializer_list<HopKey> kInlineKeys = {HopKey::Backend, HopKey::Grad, HopKey::Jvp,
                                                       HopKey::Vmap, HopKey::Functionalize};

}  // namespace

const HigherOrderOperator& scan_op() {
  static HigherOrderOperator op("strata::scan");
  static const bool registered = (op.impl(kInlineKeys, &run_scan).impl(HopKey::Trace, &trace_scan), true);
  (void)registered;
  return op;
}

const HigherOrderOperator& map_op() {
  static HigherOrderOperator op("strata::map");
  static const bool registered = (op.impl(kInlineKeys, &run_map).impl(HopKey::Trace, &trace_map), true);
  (void)registered;
  return op;
}

std::vector<Tensor> scan(FlatFn step, std::vector<Tensor> init, std::vector<Tensor> xs,
                         bool reverse) {
  HopArgs args;
  args.attrs = {static_cast<int64_t>(init.size()), reverse ? 1 : 0};
  args.operands = std::move(init);
  for (Tensor& x : xs) args.operands.push_back(std::move(x));
  args.fns = {std::move(step)};
  return scan_op()(args);
}

std::vector<Tensor> map(FlatFn f, std::vector<Tensor> xs) {
  HopArgs args;
  args.operands = std::move(xs);
  args.fns = {std::move(f)};
  return map_op()(args);
}

}  // namespace strata::control_flow
