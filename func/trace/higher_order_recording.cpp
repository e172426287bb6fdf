#include "func/trace/higher_order_recording.h"

#include <string>

#include "func/trace/fake_tensor.h"
#include "func/trace/recorder.h"
#include "tensor/error.h"
#include "transforms/layer_stack.h"

// Note [Control flow in graphs]
// Under trace() a control-flow operator is one node whose functions are
// subgraphs, so a replay decides the branch, the trip count, from its own data.
// Each function is traced once on example arguments (cond: both branches on the
// operands; while_loop: cond_fn and body_fn on the initial carry; scan and map:
// the function on step 0's slices) by a recorder pushed above the trace's own,
// whose graph is the subgraph. A tensor the function uses that an enclosing
// trace knows (an input, an earlier node's result) is captured: it becomes an
// input of the subgraph after the function's arguments, and the node passes
// the enclosing value in (one ValueList per subgraph, after the operands).
// While a function is traced the enclosing recorder only runs the ops passed
// on to it, as it does inside a recorded op. The node's results come from the
// operator's Backend implementation run on the subgraphs (in fake mode: fakes
// of the types the traced functions gave), and replay calls the operator with
// the subgraphs as its functions, at whatever key is current then. A function
// that writes an input or a captured tensor in place is refused: a replay
// could not tell which of its values the write should reach.

namespace strata {

namespace {

// Holds a recorder's recording off for a scope (the ops reaching it run).
class Unrecorded {
 public:
  explicit Unrecorded(int& depth) : depth_(depth) { ++depth_; }
  ~Unrecorded() { --depth_; }
  Unrecorded(const Unrecorded&) = delete;
  Unrecorded& operator=(const Unrecorded&) = delete;

 private:
  int& depth_;
};

// Throws if a node of g writes one of g's inputs or a view of one.
void check_inputs_not_written(const HigherOrderOperator& op, const char* fn_name, const Graph& g,
                              size_t arguments) {
  std::vector<int64_t> input_of(g.values().size(), -1);
  for (size_t i = 0; i < g.inputs().size(); ++i) input_of[static_cast<size_t>(g.inputs()[i])] = static_cast<int64_t>(i);
  for (const GraphNode& node : g.nodes()) {
    if (node.hop != nullptr) continue;
    const std::vector<Argument>& schema_args = node.op.schema().arguments();
    const ArrayRef<NodeArg> args = g.args(node);
    for (size_t a = 0; a < args.size() && a < schema_args.size(); ++a) {
      const NodeArg& arg = args[a];
      if (arg.kind != NodeArg::Kind::Value || !schema_args[a].alias || !schema_args[a].alias->is_write) continue;
      const int64_t input = input_of[static_cast<size_t>(arg.values[0])];
      if (input < 0) continue;
      const std::string which = static_cast<size_t>(input) < arguments
                                    ? "its argument leaf " + std::to_string(input)
                                    : "captured tensor " + std::to_string(static_cast<size_t>(input) - arguments);
      STRATA_FAIL(op.name().c_str(), fn_name, " writes ", which, " in place (",
                  node.op.operator_name().to_string(),
                  "); a control-flow function must not mutate its inputs under trace: return a new "
                  "tensor, or trace functionalize(f)");
    }
    if (!node.op.entry().returns_view()) continue;
    for (const NodeArg& arg : args) {
      if (arg.kind != NodeArg::Kind::Value || input_of[static_cast<size_t>(arg.values[0])] < 0) continue;
      for (const NodeResult& r : node.results) {
        for (int64_t id : r.values) input_of[static_cast<size_t>(id)] = input_of[static_cast<size_t>(arg.values[0])];
      }
      break;
    }
  }
}

}  // namespace

std::vector<ValueType> value_types_of(const std::vector<Tensor>& tensors) {
  std::vector<ValueType> types;
  types.reserve(tensors.size());
  for (const Tensor& t : tensors) types.push_back(value_type_of(t));
  return types;
}

void fail_needs_data(const char* op, const char* fn_name, const Error& cause) {
  STRATA_FAIL(op, "over a length-0 dim ", fn_name,
              " runs once without data (fake tensors: shapes only) to give its results their "
              "shapes, and it raised there; one that reads values (an item()) cannot run so: "
              "give it at least one step. The error: ", cause.what());
}

void refuse_trace_under_transform(const HigherOrderOperator& op, const char* why) {
  STRATA_FAIL(op.name().c_str(), "cannot be recorded by trace() inside a transform (",
              describe_layer_stack(), "): ", why,
              ", so the graph would keep this run's choice; call it outside the transform, or "
              "apply the transform inside its functions");
}

HigherOrderRecording::HigherOrderRecording(const HigherOrderOperator& op)
    : op_(op), recorder_(std::dynamic_pointer_cast<GraphRecorder>(innermost_recording_mode())) {
  STRATA_CHECK(recorder_ != nullptr, op.name().c_str(),
               "a dispatch mode that records graphs is active, but it is not trace()'s; "
               "only trace() can record a higher-order operator");
}

bool HigherOrderRecording::recording() const { return recorder_->inside_recorded_call_ == 0; }

bool HigherOrderRecording::fake() const { return recorder_->options_.mode == TraceMode::Fake; }

std::vector<Tensor> HigherOrderRecording::unrecorded(
    const std::function<std::vector<Tensor>()>& f) const {
  const Unrecorded off(recorder_->inside_recorded_call_);
  return f();
}

TracedFn HigherOrderRecording::trace(const char* fn_name, const FlatFn& fn,
                                     const std::vector<Tensor>& inputs, bool without_data) const {
  TraceOptions fake_options;
  if (without_data) {
    fake_options = recorder_->options_;
    fake_options.mode = TraceMode::Fake;
  }
  auto child = std::make_shared<GraphRecorder>(without_data ? fake_options : recorder_->options_);
  child->parent_ = recorder_.get();
  TracedFn traced;
  {
    const Unrecorded off(recorder_->inside_recorded_call_);
    const DispatchModeGuard guard(child);
    std::vector<Tensor> arguments;
    arguments.reserve(inputs.size());
    for (const Tensor& x : inputs) arguments.push_back(child->add_input(x));
    try {
      traced.outputs = fn(arguments);
    } catch (const Error& e) {
      if (without_data) fail_needs_data(op_.name().c_str(), fn_name, e);
      throw;
    }
    for (const Tensor& t : traced.outputs) child->add_output(t);
  }
  traced.captures = std::move(child->captures_);
  traced.graph = std::make_shared<const Graph>(child->take_graph());
  check_inputs_not_written(op_, fn_name, *traced.graph, inputs.size());
  return traced;
}

std::vector<Tensor> HigherOrderRecording::finish(const HopArgs& args,
                                                 const std::vector<TracedFn>& fns,
                                                 const std::vector<ValueType>& output_types) const {
  GraphRecorder& r = *recorder_;
  NodeArgs node_args;
  node_args.reserve(args.operands.size() + fns.size());
  for (const Tensor& x : args.operands) {
    NodeArg arg;
    arg.kind = NodeArg::Kind::Value;
    arg.values.push_back(r.value_of(x));
    node_args.push_back(std::move(arg));
  }
  HopArgs on_subgraphs;
  on_subgraphs.operands = args.operands;
  on_subgraphs.attrs = args.attrs;
  std::vector<std::shared_ptr<const Graph>> subgraphs;
  for (const TracedFn& fn : fns) {
    NodeArg captured;
    captured.kind = NodeArg::Kind::ValueList;
    for (const Tensor& c : fn.captures) captured.values.push_back(r.value_of(c));
    node_args.push_back(std::move(captured));
    subgraphs.push_back(fn.graph);
    on_subgraphs.fns.push_back(subgraph_fn(fn.graph, fn.captures));
  }
  std::vector<Tensor> outputs;
  if (fake()) {
    for (const ValueType& type : output_types) outputs.push_back(make_fake(type));
  } else {
    const Unrecorded off(r.inside_recorded_call_);
    outputs = op_.call(HopKey::Backend, on_subgraphs);
  }
  STRATA_CHECK(outputs.size() == output_types.size(), op_.name().c_str(), "returned ",
               outputs.size(), " tensors, but its traced functions give ", output_types.size());
  const size_t node = r.graph_.add_hop_node(op_, std::move(node_args), std::move(subgraphs), args.attrs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    // A result that is an operand (a branch returning its argument) is a new
    // value all the same: later uses must see the node's result.
    if (r.ids_.find(outputs[i].impl()) >= 0) outputs[i] = alias_of(outputs[i]);
    r.graph_.begin_result(node, false);
    r.ids_.bind(outputs[i], r.graph_.add_node_output(node, output_types[i]));
  }
  return outputs;
}

std::optional<int64_t> GraphRecorder::lift_capture(const Tensor& t) {
  bool known = false;
  for (const GraphRecorder* r = parent_; r != nullptr && !known; r = r->parent_) {
    known = r->ids_.find(t.impl()) >= 0;
  }
  if (!known) return std::nullopt;
  parent_->value_of(t);  // an enclosing subgraph captures it too
  const int64_t id = graph_.add_input(value_type_of(t));
  captures_.push_back(t);
  ids_.bind(t, id);
  return id;
}

}  // namespace strata
