#include "func/trace/graph.h"

#include <algorithm>
#include <sstream>

#include "tensor/error.h"

namespace strata {

ValueType value_type_of(const Tensor& t) {
  return ValueType{t.dtype(), DimVector(t.sizes()), t.device()};
}

std::string to_string(const ValueType& type) {
  std::ostringstream out;
  out << type.dtype << shape_string(type.sizes);
  if (!type.device.is_cpu()) out << ' ' << type.device;
  return out.str();
}

DispatchKeySet replay_keys(Device device) { return DispatchKeySet(backend_key(device.type)); }

GraphValue& Graph::new_value(GraphValue::Kind kind, const Tensor& like) {
  GraphValue& v = values_.emplace_back();
  v.kind = kind;
  v.type.dtype = like.dtype();
  v.type.device = like.device();
  // Element by element: a few sizes copy faster than through memcpy, or after
  // the zero fill of a resize.
  for (const int64_t size : like.sizes()) v.type.sizes.push_back(size);
  return v;
}

int64_t Graph::add_input(const Tensor& like) {
  new_value(GraphValue::Kind::Input, like);
  inputs_.push_back(static_cast<int64_t>(values_.size()) - 1);
  return inputs_.back();
}

int64_t Graph::add_input(ValueType type) {
  values_.push_back({GraphValue::Kind::Input, std::move(type), Tensor()});
  inputs_.push_back(static_cast<int64_t>(values_.size()) - 1);
  return inputs_.back();
}

int64_t Graph::add_constant(Tensor value) {
  GraphValue& v = new_value(GraphValue::Kind::Constant, value);
  v.constant = std::move(value);
  return static_cast<int64_t>(values_.size()) - 1;
}

size_t Graph::append_args(NodeArgs args) {
  const size_t first = args_.size();
  args_.insert(args_.end(), std::make_move_iterator(args.begin()),
               std::make_move_iterator(args.end()));
  return first;
}

size_t Graph::add_node(OperatorHandle op, DispatchKeySet keys, NodeArgs args) {
  return add_node(op, keys, append_args(std::move(args)));
}

size_t Graph::add_node(OperatorHandle op, DispatchKeySet keys, size_t first_arg) {
  GraphNode& node = nodes_.emplace_back();
  node.op = op;
  node.keys = keys;
  node.kernel = &op.entry().lookup(keys.highest());
  node.first_arg = static_cast<uint32_t>(first_arg);
  node.num_args = static_cast<uint32_t>(args_.size() - first_arg);
  node.typed = typed_replay_for(node, args_.data() + first_arg, node.num_args);
  return nodes_.size() - 1;
}

size_t Graph::add_hop_node(const HigherOrderOperator& hop, NodeArgs args,
                           std::vector<std::shared_ptr<const Graph>> subgraphs,
                           std::vector<int64_t> attrs) {
  GraphNode node;
  node.num_args = static_cast<uint32_t>(args.size());
  node.first_arg = static_cast<uint32_t>(append_args(std::move(args)));
  node.hop = &hop;
  node.subgraphs = std::move(subgraphs);
  node.attrs = std::move(attrs);
  nodes_.push_back(std::move(node));
  return nodes_.size() - 1;
}

std::string node_name(const GraphNode& node) {
  return node.hop != nullptr ? node.hop->name() : node.op.operator_name().to_string();
}

bool writes_argument(const GraphNode& node) {
  return node.hop == nullptr && node.op.schema().is_mutable();
}

void Graph::begin_result(size_t node, bool is_list) {
  nodes_.at(node).results.push_back(
      NodeResult{is_list, IdRange{static_cast<int64_t>(values_.size()), 0}});
}

// Extends node's last result by the value just added, which must follow it.
void Graph::extend_result(size_t node) {
  IdRange& r = nodes_.at(node).results.back().values;
  STRATA_CHECK(r.first + r.count + 1 == static_cast<int64_t>(values_.size()), "Graph",
               "internal: a node's result values must be added in order, after begin_result");
  ++r.count;
}

int64_t Graph::add_node_output(size_t node, ValueType type) {
  values_.push_back({GraphValue::Kind::NodeOutput, std::move(type), Tensor()});
  extend_result(node);
  return static_cast<int64_t>(values_.size()) - 1;
}

int64_t Graph::add_node_output(size_t node, const Tensor& t) {
  new_value(GraphValue::Kind::NodeOutput, t);
  extend_result(node);
  return static_cast<int64_t>(values_.size()) - 1;
}

int64_t Graph::add_tensor_result(const Tensor& t) {
  const auto id = static_cast<int64_t>(values_.size());
  new_value(GraphValue::Kind::NodeOutput, t);
  nodes_.back().results.push_back(NodeResult{false, IdRange{id, 1}});
  return id;
}

std::vector<std::string> Graph::op_names() const {
  std::vector<std::string> names;
  names.reserve(nodes_.size());
  for (const GraphNode& node : nodes_) names.push_back(node_name(node));
  return names;
}

size_t values_before(const Graph& g, const GraphNode& node) {
  int64_t end = 0;
  for (const NodeArg& arg : g.args(node)) {
    for (int64_t id : arg.values) end = std::max(end, id + 1);
  }
  for (const NodeResult& r : node.results) {
    if (!r.values.empty()) return static_cast<size_t>(std::max(end, r.values[0]));
  }
  return static_cast<size_t>(end);
}

Graph rebuild_graph(const Graph& g, const std::vector<bool>& keep_node,
                    const std::vector<int64_t>& replacement) {
  std::vector<bool> used(g.values().size(), false);
  for (int64_t id : g.outputs()) used[static_cast<size_t>(replacement[id])] = true;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    if (!keep_node[n]) continue;
    for (const NodeArg& arg : g.args(g.nodes()[n])) {
      for (int64_t id : arg.values) {
        if (id >= 0) used[static_cast<size_t>(replacement[id])] = true;
      }
    }
  }
  Graph out;
  std::vector<int64_t> new_id(g.values().size(), -1);
  auto source = [&](size_t id) {
    const GraphValue& v = g.values()[id];
    if (v.kind == GraphValue::Kind::Input) new_id[id] = out.add_input(v.type);
    if (v.kind == GraphValue::Kind::Constant && used[id]) new_id[id] = out.add_constant(v.constant);
  };
  size_t next_value = 0;
  auto sources_below = [&](size_t end) {
    for (; next_value < end; ++next_value) source(next_value);
  };
  auto mapped = [&](int64_t id) { return id < 0 ? id : new_id[static_cast<size_t>(replacement[id])]; };
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const GraphNode& node = g.nodes()[n];
    sources_below(values_before(g, node));
    if (!keep_node[n]) continue;
    const ArrayRef<NodeArg> node_args = g.args(node);
    NodeArgs args(node_args.begin(), node_args.end());
    for (NodeArg& arg : args) {
      for (int64_t& id : arg.values) id = mapped(id);
    }
    const size_t copy = node.hop != nullptr
                            ? out.add_hop_node(*node.hop, std::move(args), node.subgraphs, node.attrs)
                            : out.add_node(node.op, node.keys, std::move(args));
    for (const NodeResult& r : node.results) {
      out.begin_result(copy, r.is_list);
      for (int64_t id : r.values) {
        new_id[static_cast<size_t>(id)] = out.add_node_output(copy, g.values()[static_cast<size_t>(id)].type);
      }
    }
  }
  sources_below(g.values().size());
  for (int64_t id : g.outputs()) out.add_output(mapped(id));
  return out;
}

Graph Graph::optimized() const { return eliminate_dead_code(eliminate_common_subexpressions(*this)); }

}  // namespace strata
