#include "func/grad/engine.h"

#include <memory>
#include <vector>

#include "ops/elementwise_util.h"
#include "tensor/error.h"
#include "transforms/layer_stack.h"

namespace strata::autograd {

namespace {

constexpr uint32_t kNotASink = UINT32_MAX;

struct NodeTask {
  Node* node = nullptr;
  uint32_t pending = 0;       // edges from nodes not yet run
  uint32_t sink = kNotASink;  // index of the result it produces, for a requested sink
  NodeVector<Tensor> grads;
};

// Per-run bookkeeping: node -> task through an open-addressing table. Kept per
// thread and reused, so a backward pass over a small graph allocates almost
// nothing; a pool (not one object) because a formula may itself run a backward pass.
class Scratch {
 public:
  void reset() {
    for (uint32_t i = 0; i < used_; ++i) tasks_[i].grads.clear();
    used_ = 0;
    std::fill(table_.begin(), table_.end(), kEmpty);
  }

  // The task of `node`, made on first use (`made` tells which).
  NodeTask& task(Node* node, bool& made) {
    if (2 * (used_ + 1) > table_.size()) grow();
    size_t mask = table_.size() - 1;
    for (size_t h = hash(node) & mask;; h = (h + 1) & mask) {
      if (table_[h] == kEmpty) {
        table_[h] = used_;
        if (used_ == tasks_.size()) tasks_.emplace_back();
        NodeTask& t = tasks_[used_++];
        t.node = node;
        t.pending = 0;
        t.sink = kNotASink;
        t.grads.resize(node->num_outputs());
        made = true;
        return t;
      }
      if (tasks_[table_[h]].node == node) {
        made = false;
        return tasks_[table_[h]];
      }
    }
  }
  // The task of `node` if the pass reaches it, else null.
  NodeTask* find(const Node* node) {
    if (table_.empty()) return nullptr;
    size_t mask = table_.size() - 1;
    for (size_t h = hash(node) & mask; table_[h] != kEmpty; h = (h + 1) & mask) {
      if (tasks_[table_[h]].node == node) return &tasks_[table_[h]];
    }
    return nullptr;
  }
  NodeTask& existing(const Node* node) {
    NodeTask* t = find(node);
    STRATA_CHECK(t != nullptr, "backward", "internal: node ", node->name(), " was not visited");
    return *t;
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  static size_t hash(const Node* p) {
    return (reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 7;
  }
  void grow() {
    std::vector<uint32_t> old(std::max<size_t>(64, table_.size() * 2), kEmpty);
    table_.swap(old);
    size_t mask = table_.size() - 1;
    for (uint32_t i = 0; i < used_; ++i) {
      size_t h = hash(tasks_[i].node) & mask;
      while (table_[h] != kEmpty) h = (h + 1) & mask;
      table_[h] = i;
    }
  }

  std::vector<uint32_t> table_;
  std::vector<NodeTask> tasks_;  // stable indices; grows, never shrinks
  uint32_t used_ = 0;
};

class ScratchLease {
 public:
  ScratchLease() {
    if (pool().empty()) {
      scratch_ = std::make_unique<Scratch>();
    } else {
      scratch_ = std::move(pool().back());
      pool().pop_back();
    }
  }
  ~ScratchLease() {
    scratch_->reset();
    pool().push_back(std::move(scratch_));
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Scratch& operator*() { return *scratch_; }

 private:
  static std::vector<std::unique_ptr<Scratch>>& pool() {
    thread_local std::vector<std::unique_ptr<Scratch>> scratches;
    return scratches;
  }
  std::unique_ptr<Scratch> scratch_;
};

// Whether `sum` may take `grad` in place: both are plain tensors (no outer
// transform records the write or differentiates the sum), and nothing but this
// pass holds `sum` or its memory, so no one else sees it change (and, being
// contiguous, no two of its elements share memory).
bool can_accumulate_in_place(const Tensor& sum, const Tensor& grad) {
  const auto plain = [](const Tensor& t) { return (t.key_set() & kAllTransformKeys).empty(); };
  const TensorImpl& impl = *sum.impl();
  return plain(sum) && plain(grad) && impl.use_count() == 1 && impl.has_storage() &&
         impl.storage()->use_count() == 1 && impl.is_contiguous() && sum.dtype() == grad.dtype() &&
         sum.sizes() == grad.sizes();
}

void accumulate(NodeVector<Tensor>& grads, uint32_t index, Tensor grad) {
  Tensor& sum = grads[index];
  if (!sum.defined()) {
    sum = std::move(grad);
  } else if (can_accumulate_in_place(sum, grad)) {
    elementwise::accumulate_plain(sum, grad);
  } else {
    sum = sum.add(grad);
  }
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Edge>& roots,
                                 const std::vector<Tensor>& root_grads,
                                 const std::vector<const Node*>& sinks) {
  ScratchLease lease;
  Scratch& scratch = *lease;
  std::vector<Node*> stack;
  auto visit = [&](Node* node) -> NodeTask& {
    bool made = false;
    NodeTask& task = scratch.task(node, made);
    if (made) stack.push_back(node);
    return task;
  };
  for (const Edge& root : roots) {
    if (root.node) visit(root.node.get());
  }
  // Count, for each node, the edges that lead into it.
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& edge : node->next_edges()) {
      if (edge.node) ++visit(edge.node.get()).pending;
    }
  }
  std::vector<Node*> ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].node) continue;
    NodeTask& task = scratch.existing(roots[i].node.get());
    accumulate(task.grads, roots[i].input_nr, root_grads[i]);
    if (task.pending == 0) {
      ready.push_back(roots[i].node.get());
      task.pending = UINT32_MAX;  // queued once even if it is several roots
    }
  }

  std::vector<Tensor> results(sinks.size());
  for (size_t s = 0; s < sinks.size(); ++s) {
    if (NodeTask* task = scratch.find(sinks[s])) task->sink = static_cast<uint32_t>(s);
  }
  while (!ready.empty()) {
    Node* node = ready.back();
    ready.pop_back();
    NodeTask& task = scratch.existing(node);
    if (task.sink != kNotASink) results[task.sink] = task.grads[0];
    GradList grads_in;
    bool any_defined = false;
    for (const Tensor& g : task.grads) any_defined |= g.defined();
    if (any_defined) grads_in = node->apply(task.grads);
    task.grads.clear();  // frees memory as the pass goes
    const EdgeList& edges = node->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& edge = edges[i];
      if (!edge.node) continue;
      NodeTask& next = scratch.existing(edge.node.get());
      if (i < grads_in.size() && grads_in[i].defined()) {
        accumulate(next.grads, edge.input_nr, std::move(grads_in[i]));
      }
      if (--next.pending == 0) ready.push_back(edge.node.get());
    }
  }
  return results;
}

}  // namespace strata::autograd
