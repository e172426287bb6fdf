#include <numeric>
#include <sstream>
#include <unordered_map>

#include "func/trace/graph.h"

namespace strata {

namespace {

// Whether a node may be merged with an equal one: it writes nothing, and draws
// no random numbers (two draws are two different values).
// A higher-order operator's node is never merged: its subgraphs are not compared.
bool pure(const GraphNode& node) {
  if (node.hop != nullptr || writes_argument(node)) return false;
  for (const Argument& arg : node.op.schema().arguments()) {
    if (arg.type.kind == SchemaType::Kind::Generator) return false;
  }
  return true;
}

}  // namespace

// A graph with an op that writes an argument is left as it is: a later write
// could make two equal-looking calls differ.
Graph eliminate_common_subexpressions(const Graph& g) {
  std::vector<int64_t> replacement(g.values().size());
  std::iota(replacement.begin(), replacement.end(), int64_t{0});
  std::vector<bool> keep(g.nodes().size(), true);
  for (const GraphNode& node : g.nodes()) {
    if (writes_argument(node)) return rebuild_graph(g, keep, replacement);
  }
  std::unordered_map<std::string, size_t> seen;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const GraphNode& node = g.nodes()[n];
    if (!pure(node)) continue;
    std::ostringstream key;
    key << node.op.operator_name().to_string() << '(';
    for (const NodeArg& arg : g.args(node)) {
      if (arg.kind == NodeArg::Kind::Constant) {
        key << constant_text(arg.constant);
      } else {
        for (int64_t id : arg.values) key << '%' << (id < 0 ? id : replacement[id]) << ' ';
      }
      key << ',';
    }
    const auto [it, inserted] = seen.emplace(key.str(), n);
    if (inserted) continue;
    const GraphNode& first = g.nodes()[it->second];
    keep[n] = false;
    for (size_t r = 0; r < node.results.size(); ++r) {
      for (size_t k = 0; k < node.results[r].values.size(); ++k) {
        replacement[node.results[r].values[k]] = replacement[first.results[r].values[k]];
      }
    }
  }
  return rebuild_graph(g, keep, replacement);
}

}  // namespace strata
