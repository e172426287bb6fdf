#pragma once

#include <forward_list>
#include <memory>
#include <optional>
#include <vector>

#include "dispatcher/dispatch_mode.h"
#include "func/trace/decomposition.h"
#include "func/trace/graph.h"
#include "func/trace/value_map.h"

namespace strata {

// Real: run each op and record it. Fake: tensors carry sizes, dtype and device but
// no data, and each op's shape function stands in for its kernel (fake_tensor.h).
enum class TraceMode { Real, Fake };

struct TraceOptions {
  DecompositionTable decompositions;
  TraceMode mode = TraceMode::Real;
};

// The dispatch mode trace() pushes: records the calls that reach it below every
// transform layer (Note [Recording below the transforms] in recorder.cpp).
class GraphRecorder : public DispatchMode {
 public:
  // Keeps a reference to options: they outlive the trace (trace()'s own, or the
  // enclosing recorder's).
  explicit GraphRecorder(const TraceOptions& options);
  void dispatch(const OperatorHandle& op, Stack& stack) override;
  bool passes_on(const OperatorHandle& op) const override;
  // Real mode takes typed calls, except those of an op it decomposes.
  bool takes_typed(const OperatorHandle& op) const override;
  void dispatch_typed(const OperatorHandle& op, TypedCall& call) override;
  // A pointer to this recorder that owns nothing, for the mode stack: whoever
  // owns the recorder keeps it alive while it is pushed.
  std::shared_ptr<GraphRecorder> unowned() {
    return std::shared_ptr<GraphRecorder>(std::shared_ptr<void>(), this);
  }
  // Control flow must be recorded as one node with subgraphs, not as the ops
  // of the branch this run took.
  bool allows_inline_higher_order_ops() const override { return false; }

  // A placeholder for one input leaf; returns the tensor the traced function
  // gets for it: the leaf itself, which the caller keeps alive while the trace
  // runs (the recorder borrows it), or a fake one in fake mode, or an alias of a
  // leaf passed twice (so each is its own input) or of a subgraph's argument
  // (so a capture of the same tensor stays a capture), which the recorder keeps.
  const Tensor& add_input(const Tensor& leaf);
  void add_output(const Tensor& leaf);
  Graph take_graph() { return std::move(graph_); }

 private:
  // Records control flow as nodes with subgraphs (higher_order_recording.cpp).
  friend class HigherOrderRecording;
  int64_t value_of(const Tensor& t);
  // A value of an enclosing trace, used by the function this recorder traces
  // into a subgraph: a new input of the subgraph, or nullopt when no enclosing
  // trace knows t.
  std::optional<int64_t> lift_capture(const Tensor& t);
  void record(const OperatorHandle& op, Stack& stack);
  void record_typed(const OperatorHandle& op, TypedCall& call);
  // An argument as a boxed call has it (a Generator as a snapshot of its state:
  // Note [Trace of random ops]).
  void record_boxed_arg(const Argument& schema_arg, const IValue& v, NodeArg& arg);
  void record_list(ArrayRef<Tensor> list, NodeArg& arg);
  // The node of op whose arguments, from first_arg on, are made.
  void add_node_results(const OperatorHandle& op, Device device, size_t first_arg,
                        ArrayRef<ArgRef> results);
  template <class F>
  void inside_recorded_call(size_t first_arg, F&& run);
  // Runs a call: its kernel, or in fake mode its shape function.
  void execute(const OperatorHandle& op, Stack& stack);

  // A small function's graph fits without regrowing (regrowth moves every value).
  static constexpr size_t kExpectedValues = 32;
  static constexpr size_t kExpectedNodes = 16;
  static constexpr size_t kExpectedArgs = 48;
  static constexpr size_t kExpectedInputs = 8;
  static constexpr size_t kExpectedOutputs = 4;

  const TraceOptions& options_;
  Graph graph_;
  ValueMap ids_;
  int inside_recorded_call_ = 0;
  // Set while tracing a higher-order operator's function: the enclosing trace's
  // recorder, and the tensors lifted from it (in the order of their inputs).
  GraphRecorder* parent_ = nullptr;
  std::vector<Tensor> captures_;
  // The inputs add_input() made (a list: their addresses are handed out).
  std::forward_list<Tensor> replaced_inputs_;
};

// Pushes a GraphRecorder for the session's scope; trace() uses it.
class TraceSession {
 public:
  // options must outlive the session.
  explicit TraceSession(const TraceOptions& options);
  // The tensor the traced function gets for leaf (GraphRecorder::add_input()).
  const Tensor& input(const Tensor& leaf) { return recorder_.add_input(leaf); }
  void output(const Tensor& leaf) { recorder_.add_output(leaf); }
  Graph finish() { return recorder_.take_graph(); }

 private:
  // Held here, not on the heap: the mode stack gets a pointer that owns nothing
  // (unowned()), and guard_, made after it and gone before it, pops it first.
  GraphRecorder recorder_;
  DispatchModeGuard guard_;
};

}  // namespace strata
