#pragma once

#include <string>
#include <vector>

#include "transforms/grad/node.h"
#include "transforms/tensor_wrapper.h"

namespace strata::autograd {

// The history of a base after an in-place write through one of its views: the
// base as it was, with the view's region replaced by the view's new value
// (Note [Views and in-place writes]). Its gradient splits into the part outside
// the region (to the base's previous history, edge 0) and the region itself (to
// the written view's history, edge 1).
class ViewWriteNode final : public Node {
 public:
  ViewWriteNode(std::vector<ViewStep> steps, EdgeList next_edges)
      : Node(std::move(next_edges)), steps_(std::move(steps)) {}
  GradList apply(NodeVector<Tensor>& grads_out) override;
  uint32_t num_outputs() const override { return 1; }
  std::string name() const override { return "ViewWrite"; }

 private:
  std::vector<ViewStep> steps_;
};

// After an in-place op recorded on `written` (a wrapper at its level whose
// grad_fn is the op's node): if it is a view, gives its base the history of the
// write (a ViewWriteNode).
void rebase_history(TensorWrapper& written);

}  // namespace strata::autograd
