#include "func/trace/recorder.h"

#include "func/trace/fake_tensor.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "transforms/layer_stack.h"

// Note [Recording below the transforms]
// The recorder is a dispatch mode, so it sees every call at the Mode key: calls
// of the traced function itself, and, inside a transform, the calls each layer
// makes on its way down. Only the calls that reach it with the layer stack empty
// are recorded: those are the ops that reach the backend after every transform
// has done its work (a batched matmul, a backward formula's mul), on plain
// tensors, so trace(vmap(grad(f))) is a flat graph of ordinary ops. While a
// recorded op runs, the calls its kernel makes (a composite op's parts) are not
// recorded again: replaying the op makes them. A typed call made inside a
// transform skips the recorder unboxed (passes_on()).
//
// Note [Trace of random ops]
// A random op's node stores, as its Generator argument, a copy of the state (seed
// and offset) of the generator it drew from, the default generator when it was
// given none. Replay draws from a fresh generator in that state (Note [Replay]), so
// a replay reproduces the traced numbers and leaves the caller's generators alone.

namespace strata {

GraphRecorder::GraphRecorder(const TraceOptions& options) : options_(options) {
  graph_.reserve(kExpectedValues, kExpectedNodes, kExpectedArgs, kExpectedInputs, kExpectedOutputs);
}

int64_t GraphRecorder::value_of(const Tensor& t) {
  const int64_t bound = ids_.find(t.impl());
  if (bound >= 0) return bound;
  if (parent_ != nullptr) {
    if (const std::optional<int64_t> lifted = lift_capture(t)) return *lifted;
  }
  STRATA_CHECK(t.key_set() == DispatchKeySet(backend_key(t.device().type)), "trace",
               "a ", t.impl()->impl_name(), " reached the recorder as a constant; ",
               "only plain tensors can be kept in a graph");
  STRATA_CHECK(!is_fake(t), "trace", "a fake tensor from another trace reached the recorder");
  const int64_t id = graph_.add_constant(t);
  ids_.bind(t, id);
  return id;
}

const Tensor& GraphRecorder::add_input(const Tensor& leaf) {
  STRATA_CHECK(leaf.defined(), "trace", "an input leaf is an undefined tensor");
  const int64_t id = graph_.add_input(leaf);
  // A subgraph's argument is always an alias: the function may also capture
  // the operand it was passed (a while_loop body reading the tensor that
  // started its carry), and that capture must stay the enclosing value, not
  // become the argument (which a later iteration rebinds).
  if (options_.mode == TraceMode::Real && parent_ == nullptr && ids_.bind_borrowed_if_new(leaf, id)) {
    return leaf;
  }
  Tensor& traced = replaced_inputs_.emplace_front(
      options_.mode == TraceMode::Fake ? make_fake(value_type_of(leaf)) : alias_of(leaf));
  // A wrapped number keeps its place in type promotion (a Python-style scalar).
  traced.impl()->set_wrapped_number(leaf.impl()->is_wrapped_number());
  ids_.bind_borrowed(traced, id);
  return traced;
}

void GraphRecorder::add_output(const Tensor& leaf) {
  STRATA_CHECK(leaf.defined(), "trace", "an output leaf is an undefined tensor");
  graph_.add_output(value_of(leaf));
}

namespace {

Device device_of(const Stack& stack, size_t first) {
  Device device;
  any_tensor_argument(stack, first, [&](const Tensor& t) {
    if (t.defined()) device = t.device();
    return t.defined();
  });
  return device;
}

}  // namespace

void GraphRecorder::dispatch(const OperatorHandle& op, Stack& stack) {
  if (!layer_stack_empty()) {
    call_next(op, stack);
  } else if (inside_recorded_call_ > 0) {
    execute(op, stack);
  } else if (const KernelFunction* decomposition = options_.decompositions.find(op)) {
    const Device device = device_of(stack, stack.size() - op.schema().arguments().size());
    const DispatchModeGuard visible(unowned());
    decomposition->call_boxed(op, replay_keys(device), stack);
  } else {
    record(op, stack);
  }
}

bool GraphRecorder::passes_on(const OperatorHandle& /*op*/) const {
  // Inside a recorded op, a real trace only runs the calls its kernel makes.
  return (inside_recorded_call_ > 0 && options_.mode == TraceMode::Real) || !layer_stack_empty();
}

bool GraphRecorder::takes_typed(const OperatorHandle& op) const {
  return options_.mode == TraceMode::Real && options_.decompositions.find(op) == nullptr;
}

void GraphRecorder::dispatch_typed(const OperatorHandle& op, TypedCall& call) {
  if (inside_recorded_call_ > 0 || !layer_stack_empty()) {
    call_next_typed(op, call);
  } else {
    record_typed(op, call);
  }
}

void GraphRecorder::execute(const OperatorHandle& op, Stack& stack) {
  if (options_.mode == TraceMode::Fake && fake_runs_whole(op)) {
    run_fake(op, stack);
  } else {
    call_next(op, stack);
  }
}

void GraphRecorder::record_boxed_arg(const Argument& schema_arg, const IValue& v, NodeArg& arg) {
  if (v.is_tensor()) {
    arg.kind = NodeArg::Kind::Value;
    arg.values.push_back(value_of(v.to_tensor()));
  } else if (v.is_tensor_list()) {
    record_list(v.to_tensor_list(), arg);
  } else if (schema_arg.type.kind == SchemaType::Kind::Generator) {
    const Generator gen = v.is_none() ? default_generator() : v.to_generator();
    Generator snapshot(gen.seed());
    snapshot.set_offset(gen.offset());
    arg.constant = snapshot;
  } else {
    arg.constant = v;
  }
}

void GraphRecorder::record_list(ArrayRef<Tensor> list, NodeArg& arg) {
  arg.kind = NodeArg::Kind::ValueList;
  for (const Tensor& t : list) arg.values.push_back(t.defined() ? value_of(t) : -1);
}

void GraphRecorder::add_node_results(const OperatorHandle& op, Device device, size_t first_arg,
                                     ArrayRef<ArgRef> results) {
  const size_t node = graph_.add_node(op, replay_keys(device), first_arg);
  for (const ArgRef& r : results) {
    if (r.kind == ArgRef::Kind::Tensor) {
      ids_.bind(r.tensor(), graph_.add_tensor_result(r.tensor()));
    } else if (r.kind == ArgRef::Kind::TensorList) {
      graph_.begin_result(node, true);
      for (const Tensor& t : r.tensor_list()) ids_.bind(t, graph_.add_node_output(node, t));
    } else {
      const IValue v = r.box();
      STRATA_FAIL("trace", op.operator_name().to_string(), " returns a ", to_string(v.tag()),
                  "; a graph records only ops that return tensors");
    }
  }
}

// Runs `run` as a recorded call whose arguments, from first_arg on, are made:
// the calls it makes are executed, not recorded; if it throws, its arguments go.
template <class F>
void GraphRecorder::inside_recorded_call(size_t first_arg, F&& run) {
  ++inside_recorded_call_;
  try {
    run();
  } catch (...) {
    --inside_recorded_call_;
    graph_.drop_args(first_arg);
    throw;
  }
  --inside_recorded_call_;
}

void GraphRecorder::record(const OperatorHandle& op, Stack& stack) {
  const FunctionSchema& schema = op.schema();
  const size_t first = stack.size() - schema.arguments().size();
  const size_t first_arg = graph_.next_arg();
  for (size_t i = first; i < stack.size(); ++i) {
    record_boxed_arg(schema.arguments()[i - first], stack[i], graph_.new_arg());
  }
  const Device arg_device = device_of(stack, first);
  inside_recorded_call(first_arg, [&] { execute(op, stack); });
  const size_t out_first = stack.size() - schema.returns().size();
  SmallVector<ArgRef, 2> results;
  for (size_t i = out_first; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.is_tensor()) {
      results.push_back(detail::arg_ref(v.to_tensor()));
    } else if (v.is_tensor_list()) {
      results.push_back(detail::arg_ref(v.to_tensor_list()));
    } else {
      results.push_back(ArgRef{ArgRef::Kind::Other, &v, 0, [](const ArgRef& ref) {
                                 return *static_cast<const IValue*>(ref.ptr);
                               }});
    }
  }
  const Device device = !results.empty() && results[0].kind == ArgRef::Kind::Tensor
                            ? results[0].tensor().device()
                            : arg_device;
  add_node_results(op, device, first_arg, results);
}

void GraphRecorder::record_typed(const OperatorHandle& op, TypedCall& call) {
  const FunctionSchema& schema = op.schema();
  const ArrayRef<ArgRef> refs = call.arguments();
  const size_t first_arg = graph_.next_arg();
  std::optional<Device> arg_device;
  auto seen = [&](const Tensor& t) {
    if (!arg_device && t.defined()) arg_device = t.device();
  };
  for (size_t i = 0; i < refs.size(); ++i) {
    const ArgRef& ref = refs[i];
    NodeArg& arg = graph_.new_arg();
    if (ref.kind == ArgRef::Kind::Tensor && ref.tensor().defined()) {
      arg.kind = NodeArg::Kind::Value;
      arg.values.push_back(value_of(ref.tensor()));
      seen(ref.tensor());
    } else if (ref.kind == ArgRef::Kind::OptionalTensor && ref.optional_tensor() &&
               ref.optional_tensor()->defined()) {
      arg.kind = NodeArg::Kind::Value;
      arg.values.push_back(value_of(*ref.optional_tensor()));
      seen(*ref.optional_tensor());
    } else if (ref.kind == ArgRef::Kind::TensorList) {
      record_list(ref.tensor_list(), arg);
      for (const Tensor& t : ref.tensor_list()) seen(t);
    } else if (ref.kind == ArgRef::Kind::OptionalTensor && !ref.optional_tensor()) {
      // None: a constant, as NodeArg starts.
    } else {
      const IValue v = ref.box();
      record_boxed_arg(schema.arguments()[i], v, arg);
      if (v.is_tensor()) seen(v.to_tensor());
    }
  }
  inside_recorded_call(first_arg, [&] { call_next_typed(op, call); });
  const ArrayRef<ArgRef> results = call.results();
  const Device device = !results.empty() && results[0].kind == ArgRef::Kind::Tensor
                            ? results[0].tensor().device()
                            : arg_device.value_or(Device());
  add_node_results(op, device, first_arg, results);
}

namespace {

// A subgraph's inputs are values below the layers (a control-flow function traced
// inside a transform: Note [Control flow traced inside vmap and functionalize]),
// so only trace() itself must start outside every transform.
const TraceOptions& outside_transforms(const TraceOptions& options) {
  STRATA_CHECK(layer_stack_empty(), "trace", "trace() inside a transform (", describe_layer_stack(),
               ") is not supported; trace the transformed function");
  return options;
}

}  // namespace

TraceSession::TraceSession(const TraceOptions& options)
    : recorder_(outside_transforms(options)), guard_(recorder_.unowned()) {}

}  // namespace strata
