#pragma once

#include <memory>
#include <vector>

#include "func/trace/graph.h"
#include "tensor/error.h"
#include "transforms/higher_order_op.h"

// What a higher-order operator's Trace implementation uses to record its call
// as one node with subgraphs (Note [Control flow in graphs] in
// higher_order_recording.cpp).

namespace strata {

class GraphRecorder;

// One of the operator's functions traced into a subgraph.
struct TracedFn {
  std::shared_ptr<const Graph> graph;
  // The enclosing trace's tensors the function used: the subgraph's inputs
  // after the function's arguments.
  std::vector<Tensor> captures;
  // Its results on the example arguments (fake tensors in fake mode).
  std::vector<Tensor> outputs;
};

// One call of a higher-order operator under trace().
class HigherOrderRecording {
 public:
  // Finds the trace the call records into; throws if the recording mode is not
  // trace()'s.
  explicit HigherOrderRecording(const HigherOrderOperator& op);

  // False while the trace runs a recorded op's kernel or computes the node's
  // results: the call is then part of that work and runs inline.
  bool recording() const;
  bool fake() const;

  // Runs fn once on `inputs` (the operator's example arguments for it),
  // recording its ops into a new subgraph. Throws if fn writes one of its
  // inputs or captured tensors in place; `fn_name` names it in the message.
  // `without_data`: on fakes (TraceMode::Fake) whatever the trace's mode, for
  // a scan over a length-0 dim (Note [A length-0 scan runs no step]).
  TracedFn trace(const char* fn_name, const FlatFn& fn, const std::vector<Tensor>& inputs,
                 bool without_data = false) const;
  // f's results with the trace not recording (example arguments sliced from operands).
  std::vector<Tensor> unrecorded(const std::function<std::vector<Tensor>()>& f) const;
  // Adds the node (args' operands and attrs, fns as subgraphs) and returns its
  // results: computed by the operator's Backend implementation on the
  // subgraphs, or fakes of `output_types` in fake mode.
  std::vector<Tensor> finish(const HopArgs& args, const std::vector<TracedFn>& fns,
                             const std::vector<ValueType>& output_types) const;

 private:
  const HigherOrderOperator& op_;
  std::shared_ptr<GraphRecorder> recorder_;
};

// Throws: `op` cannot be recorded under trace inside a transform; `why` says
// what would make the graph depend on this run's data.
[[noreturn]] void refuse_trace_under_transform(const HigherOrderOperator& op, const char* why);

// Throws: `fn_name`, run without data for a length-0 scan or map, raised
// `cause` (reading a fake tensor's values, or an error of its own).
[[noreturn]] void fail_needs_data(const char* op, const char* fn_name, const Error& cause);

std::vector<ValueType> value_types_of(const std::vector<Tensor>& tensors);

}  // namespace strata
