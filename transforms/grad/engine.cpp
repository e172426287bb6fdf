#include <unordered_map>

#include "tensor/error.h"
#include "transforms/grad/node.h"

namespace strata::autograd {

namespace {

struct NodeTask {
  uint32_t pending = 0;  // edges from nodes not yet run
  std::vector<Tensor> grads;
};

void accumulate(std::vector<Tensor>& grads, uint32_t index, Tensor grad) {
  Tensor& slot = grads[index];
  // Out of place: the sum may itself be differentiated by an outer level.
  slot = slot.defined() ? slot.add(grad) : std::move(grad);
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Edge>& roots,
                                 const std::vector<Tensor>& root_grads,
                                 const std::vector<const Node*>& sinks) {
  std::unordered_map<const Node*, NodeTask> tasks;
  std::vector<Node*> to_visit;
  auto task_for = [&](Node* node) -> NodeTask& {
    auto [it, inserted] = tasks.try_emplace(node);
    if (inserted) {
      it->second.grads.resize(node->num_outputs());
      to_visit.push_back(node);
    }
    return it->second;
  };
  for (const Edge& root : roots) {
    if (root.node) task_for(root.node.get());
  }
  // Count, for each node, the edges that lead into it.
  while (!to_visit.empty()) {
    Node* node = to_visit.back();
    to_visit.pop_back();
    for (const Edge& edge : node->next_edges()) {
      if (edge.node) ++task_for(edge.node.get()).pending;
    }
  }
  std::vector<Node*> ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].node) continue;
    NodeTask& task = tasks.at(roots[i].node.get());
    accumulate(task.grads, roots[i].input_nr, root_grads[i]);
    if (task.pending == 0 && task.grads.size() != 0) {
      ready.push_back(roots[i].node.get());
      task.pending = UINT32_MAX;  // queued once even if it is several roots
    }
  }

  std::unordered_map<const Node*, size_t> sink_index;
  for (size_t i = 0; i < sinks.size(); ++i) sink_index.emplace(sinks[i], i);
  std::vector<Tensor> results(sinks.size());

  while (!ready.empty()) {
    Node* node = ready.back();
    ready.pop_back();
    NodeTask& task = tasks.at(node);
    if (auto sink = sink_index.find(node); sink != sink_index.end()) {
      results[sink->second] = task.grads[0];
    }
    std::vector<Tensor> grads_in;
    bool any_defined = false;
    for (const Tensor& g : task.grads) any_defined |= g.defined();
    if (any_defined) grads_in = node->apply(task.grads);
    task.grads.clear();  // frees memory as the pass goes
    const std::vector<Edge>& edges = node->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& edge = edges[i];
      if (!edge.node) continue;
      NodeTask& next = tasks.at(edge.node.get());
      if (i < grads_in.size() && grads_in[i].defined()) {
        accumulate(next.grads, edge.input_nr, std::move(grads_in[i]));
      }
      if (--next.pending == 0) ready.push_back(edge.node.get());
    }
  }
  return results;
}

}  // namespace strata::autograd
