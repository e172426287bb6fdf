#include <numeric>

#include "func/trace/graph.h"

namespace strata {

// Walks the nodes backwards from the outputs: a node is live when a live node or
// an output uses one of its results, or when it writes an argument (its effect is
// the point).
Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live_value(g.values().size(), false);
  for (int64_t id : g.outputs()) live_value[static_cast<size_t>(id)] = true;
  std::vector<bool> keep(g.nodes().size(), false);
  for (size_t n = g.nodes().size(); n-- > 0;) {
    const GraphNode& node = g.nodes()[n];
    bool live = writes_argument(node);
    for (const NodeResult& r : node.results) {
      for (int64_t id : r.values) live = live || live_value[static_cast<size_t>(id)];
    }
    if (!live) continue;
    keep[n] = true;
    for (const NodeArg& arg : g.args(node)) {
      for (int64_t id : arg.values) {
        if (id >= 0) live_value[static_cast<size_t>(id)] = true;
      }
    }
  }
  std::vector<int64_t> identity(g.values().size());
  std::iota(identity.begin(), identity.end(), int64_t{0});
  return rebuild_graph(g, keep, identity);
}

}  // namespace strata
