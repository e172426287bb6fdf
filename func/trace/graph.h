#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "dispatcher/ivalue.h"
#include "tensor/small_vector.h"
#include "func/trace/typed_replay.h"
#include "func/tree.h"
#include "transforms/higher_order_op.h"

// Note [Trace graphs]
// A Graph is what trace() recorded: values (tensors) and nodes (operator calls).
// Every value has an id, its index in values(); it is an input (a placeholder for
// one flattened tensor leaf of the traced function's arguments), a constant (a
// tensor the function used but did not compute from its inputs, kept by value),
// or an output of a node. A node's arguments are value references or constant
// IValues, as the op's schema lists them. Values are numbered in the order they
// appear, so tracing the same function twice gives the same graph and text.
//
// A node's operator is resolved once, when the node is made: replay calls the
// kernel of its backend key directly, past the layer stack and the modes, when
// neither is active (Note [Replay] in replay.cpp).
//
// Note [Node arguments]
// The arguments of every node live in one vector of the graph, each node holding
// the range of its own (Graph::args(node)): recording a node allocates no
// argument block of its own, and a graph frees them all at once.

namespace strata {

// What a value is: a tensor's dtype, sizes and device.
struct ValueType {
  ScalarType dtype = ScalarType::Float32;
  DimVector sizes;
  Device device;
  friend bool operator==(const ValueType&, const ValueType&) = default;
};
ValueType value_type_of(const Tensor& t);
// "Float64[2, 3]", with " cuda:0" after it off the CPU.
std::string to_string(const ValueType& type);

struct GraphValue {
  enum class Kind : uint8_t { Input, Constant, NodeOutput };
  Kind kind = Kind::NodeOutput;
  ValueType type;
  Tensor constant;  // the value of a Constant
};

// Value ids; inline for the usual one or two, so recording a node allocates less.
using ValueIds = SmallVector<int64_t, 2>;

// A graph's containers take their memory from the thread's small-block cache
// (Note [CPU allocator cache]): a trace makes a few per node and frees them all
// with the graph, which malloc serves slowly (its larger blocks skip its own
// per-thread cache).
template <class T>
using GraphVector = std::vector<T, CachedAllocator<T>>;

// One argument of a node: a constant, a value, or a list of values (-1 for a None
// element of a Tensor?[] list).
struct NodeArg {
  enum class Kind : uint8_t { Constant, Value, ValueList };
  Kind kind = Kind::Constant;
  IValue constant;
  ValueIds values;
};
// A node's arguments while it is built (the parser's and the passes' way in).
using NodeArgs = GraphVector<NodeArg>;

// Consecutive value ids: a node's results are numbered in order as it is added.
struct IdRange {
  int64_t first = 0;
  int64_t count = 0;

  struct Iterator {
    int64_t id;
    int64_t operator*() const { return id; }
    Iterator& operator++() {
      ++id;
      return *this;
    }
    friend bool operator==(Iterator, Iterator) = default;
  };
  Iterator begin() const { return {first}; }
  Iterator end() const { return {first + count}; }
  size_t size() const { return static_cast<size_t>(count); }
  bool empty() const { return count == 0; }
  int64_t operator[](size_t i) const { return first + static_cast<int64_t>(i); }
};

// One result of a node: a tensor (one value) or a tensor list (several).
struct NodeResult {
  bool is_list = false;
  IdRange values;
};

class Graph;

struct GraphNode {
  // Unset (a null entry) in a higher-order operator's node.
  OperatorHandle op{nullptr};
  // The kernel replay calls, resolved for the backend key at construction.
  DispatchKeySet keys;
  const KernelFunction* kernel = nullptr;
  // Its arguments: Graph::args(node), a range of the graph's argument storage
  // (Note [Node arguments]).
  uint32_t first_arg = 0;
  uint32_t num_args = 0;
  // Inline for the usual single result, so recording a node allocates less.
  SmallVector<NodeResult, 1> results;
  // The kernel's typed call, when it has one replay knows (Note [Typed replay]).
  TypedReplayFn typed = nullptr;
  // A higher-order operator's node (Note [Control flow in graphs] in
  // higher_order_recording.cpp): args are one Value per operand, then one
  // ValueList per subgraph, the values it captures; each result is one tensor.
  const HigherOrderOperator* hop = nullptr;
  std::vector<std::shared_ptr<const Graph>> subgraphs;
  std::vector<int64_t> attrs;
};

class Graph {
 public:
  Graph() = default;

  // Reads the text of to_string() back; throws strata::Error naming the line and
  // column of malformed text or an unknown operator.
  static Graph parse(std::string_view text);

  // Replays on new inputs (the tensor leaves of arguments shaped like the traced
  // ones): the traced function's outputs, flattened in tree order. Throws
  // strata::Error naming the input (its placeholder) when the number of inputs,
  // or one's dtype, sizes or device, differs from the traced ones.
  template <class... Args>
  std::vector<Tensor> operator()(const Args&... args) const {
    std::vector<Tensor> leaves;
    (tree::for_each_leaf(args, [&](const Tensor& t) { leaves.push_back(t); }), ...);
    return run(leaves);
  }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  // Deterministic text, one line per value or node (Note [Trace graph text]).
  std::string to_string() const;
  // "strata::mul.Tensor" for each node, in order.
  std::vector<std::string> op_names() const;
  // The graph after dead-code and common-subexpression elimination.
  Graph optimized() const;

  const GraphVector<GraphValue>& values() const { return values_; }
  const GraphVector<GraphNode>& nodes() const { return nodes_; }
  ArrayRef<NodeArg> args(const GraphNode& node) const {
    return {args_.data() + node.first_arg, node.num_args};
  }
  const GraphVector<int64_t>& inputs() const { return inputs_; }
  const GraphVector<int64_t>& outputs() const { return outputs_; }

  // Building (the recorder, the parser and the passes).
  void reserve(size_t values, size_t nodes, size_t args, size_t inputs, size_t outputs) {
    values_.reserve(values);
    nodes_.reserve(nodes);
    args_.reserve(args);
    inputs_.reserve(inputs);
    outputs_.reserve(outputs);
  }
  int64_t add_input(ValueType type);
  // An input typed as `like`.
  int64_t add_input(const Tensor& like);
  int64_t add_constant(Tensor value);
  // Resolves the node's kernel for `keys` (its backend key); returns the node's index.
  size_t add_node(OperatorHandle op, DispatchKeySet keys, NodeArgs args);
  // The recorder's way, with no argument vector of its own: the next node's
  // arguments are made in place (new_arg()), then add_node(op, keys, first) makes
  // the node of the arguments from `first` (next_arg() before the first of them)
  // to the last one made. drop_args(first) forgets them instead (a failed call).
  size_t next_arg() const { return args_.size(); }
  NodeArg& new_arg() { return args_.emplace_back(); }
  void drop_args(size_t first) {
    args_.erase(args_.begin() + static_cast<std::ptrdiff_t>(first), args_.end());
  }
  size_t add_node(OperatorHandle op, DispatchKeySet keys, size_t first_arg);
  // A higher-order operator's node; returns its index.
  size_t add_hop_node(const HigherOrderOperator& hop, NodeArgs args,
                      std::vector<std::shared_ptr<const Graph>> subgraphs, std::vector<int64_t> attrs);
  // Starts the next result of node `node`: a tensor, or a tensor list.
  void begin_result(size_t node, bool is_list);
  // A new value in the last result begun of node `node`.
  int64_t add_node_output(size_t node, ValueType type);
  // The same, typed as t (the recorder's, made in place).
  int64_t add_node_output(size_t node, const Tensor& t);
  // A tensor result of node `node`, the last node, typed as t: begin_result and
  // add_node_output in one (the recorder's usual result).
  int64_t add_tensor_result(const Tensor& t);
  void add_output(int64_t value) { outputs_.push_back(value); }

 private:
  // A new value typed as `like`, made in place (the recorder's path).
  GraphValue& new_value(GraphValue::Kind kind, const Tensor& like);
  void extend_result(size_t node);
  size_t append_args(NodeArgs args);

  GraphVector<GraphValue> values_;
  GraphVector<GraphNode> nodes_;
  GraphVector<NodeArg> args_;
  GraphVector<int64_t> inputs_;
  GraphVector<int64_t> outputs_;
};

// "strata::mul.Tensor", or a higher-order operator's "strata::cond".
std::string node_name(const GraphNode& node);
// Whether the node writes one of its arguments (a higher-order operator's never
// does: its subgraphs may not write their inputs).
bool writes_argument(const GraphNode& node);

// The values a node of g needs printed (or copied) before it: every id below this.
size_t values_before(const Graph& g, const GraphNode& node);

// A node's constant argument as the text writes it (exact, so equal text means
// an equal value).
std::string constant_text(const IValue& v);

// A copy of g without the nodes for which keep_node is false, and with each use of
// value v replaced by replacement[v] (the passes' rebuild; unused constants go).
Graph rebuild_graph(const Graph& g, const std::vector<bool>& keep_node,
                    const std::vector<int64_t>& replacement);
// Drops the nodes whose results nothing uses (dce.cpp); ops that write an
// argument stay.
Graph eliminate_dead_code(const Graph& g);
// Merges nodes that call the same op on the same arguments (cse.cpp).
Graph eliminate_common_subexpressions(const Graph& g);

// A subgraph as a higher-order operator's function: g.run(args, then captured).
FlatFn subgraph_fn(std::shared_ptr<const Graph> g, std::vector<Tensor> captured);

// The key replay calls an op's kernel at: its device's backend.
DispatchKeySet replay_keys(Device device);

}  // namespace strata
