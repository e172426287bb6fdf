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

GraphRecorder::GraphRecorder(TraceOptions options) : options_(std::move(options)) {
  graph_.reserve(kExpectedValues, kExpectedNodes, kExpectedInputs, kExpectedOutputs);
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

Tensor GraphRecorder::add_input(const Tensor& leaf) {
  STRATA_CHECK(leaf.defined(), "trace", "an input leaf is an undefined tensor");
  STRATA_CHECK(layer_stack_empty(), "trace", "trace() inside a transform (",
               describe_layer_stack(), ") is not supported; trace the transformed function");
  Tensor traced = options_.mode == TraceMode::Fake ? make_fake(value_type_of(leaf))
                  : ids_.find(leaf.impl()) >= 0 ? alias_of(leaf)
                                            : leaf;
  // A wrapped number keeps its place in type promotion (a Python-style scalar).
  traced.impl()->set_wrapped_number(leaf.impl()->is_wrapped_number());
  ids_.bind(traced, graph_.add_input(value_type_of(leaf)));
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
    const DispatchModeGuard visible(shared_from_this());
    decomposition->call_boxed(op, replay_keys(device), stack);
  } else {
    record(op, stack);
  }
}

bool GraphRecorder::passes_on(const OperatorHandle& /*op*/) const {
  return !layer_stack_empty();
}

void GraphRecorder::execute(const OperatorHandle& op, Stack& stack) {
  if (options_.mode == TraceMode::Fake && fake_runs_whole(op)) {
    run_fake(op, stack);
  } else {
    call_next(op, stack);
  }
}

void GraphRecorder::record(const OperatorHandle& op, Stack& stack) {
  const FunctionSchema& schema = op.schema();
  const size_t first = stack.size() - schema.arguments().size();
  std::vector<NodeArg> args;
  args.reserve(schema.arguments().size());
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    NodeArg& arg = args.emplace_back();
    if (v.is_tensor()) {
      arg.kind = NodeArg::Kind::Value;
      arg.values.push_back(value_of(v.to_tensor()));
    } else if (v.is_tensor_list()) {
      arg.kind = NodeArg::Kind::ValueList;
      for (const Tensor& t : v.to_tensor_list()) arg.values.push_back(t.defined() ? value_of(t) : -1);
    } else if (schema.arguments()[i - first].type.kind == SchemaType::Kind::Generator) {
      const Generator gen = v.is_none() ? default_generator() : v.to_generator();
      Generator snapshot(gen.seed());
      snapshot.set_offset(gen.offset());
      arg.constant = snapshot;
    } else {
      arg.constant = v;
    }
  }
  const Device arg_device = device_of(stack, first);
  ++inside_recorded_call_;
  try {
    execute(op, stack);
  } catch (...) {
    --inside_recorded_call_;
    throw;
  }
  --inside_recorded_call_;
  const size_t results = schema.returns().size();
  const size_t out_first = stack.size() - results;
  Device device = arg_device;
  if (results > 0 && stack[out_first].is_tensor()) device = stack[out_first].to_tensor().device();
  const size_t node = graph_.add_node(op, replay_keys(device), std::move(args));
  for (size_t i = out_first; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.is_tensor()) {
      graph_.begin_result(node, false);
      ids_.bind(v.to_tensor(), graph_.add_node_output(node, value_type_of(v.to_tensor())));
    } else if (v.is_tensor_list()) {
      graph_.begin_result(node, true);
      for (const Tensor& t : v.to_tensor_list()) ids_.bind(t, graph_.add_node_output(node, value_type_of(t)));
    } else {
      STRATA_FAIL("trace", op.operator_name().to_string(), " returns a ", to_string(v.tag()),
                  "; a graph records only ops that return tensors");
    }
  }
}

TraceSession::TraceSession(TraceOptions options)
    : recorder_(std::make_shared<GraphRecorder>(std::move(options))), guard_(recorder_) {}

}  // namespace strata
