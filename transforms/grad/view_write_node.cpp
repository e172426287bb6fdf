#include "transforms/grad/view_write_node.h"

#include "transforms/grad/gradient_edge.h"

#include "transforms/view_tracking.h"

namespace strata::autograd {

GradList ViewWriteNode::apply(NodeVector<Tensor>& grads_out) {
  const Tensor& grad = grads_out[0];
  GradList grads_in;
  Tensor outside = grad.clone();
  replay_view(steps_, outside).zero_();
  grads_in.push_back(std::move(outside));
  // The region from a contiguous grad: an incoming grad may be expanded (the
  // backward of a sum), and a view step (reshape's view) cannot always be taken
  // of that.
  grads_in.push_back(replay_view(steps_, grad.contiguous()));
  return grads_in;
}

void rebase_history(TensorWrapper& written) {
  TensorWrapper* base = view_base(written);
  const AutogradMeta& view = written.autograd();
  if (base == nullptr || !view.requires_grad || !view.grad_fn) return;
  AutogradMeta& meta = base->autograd();
  EdgeList edges;
  if (meta.requires_grad) {
    edges.push_back(gradient_edge(meta));
  } else {
    edges.emplace_back();
  }
  edges.push_back(Edge{view.grad_fn, view.output_nr});
  meta.grad_fn = make_intrusive<ViewWriteNode>(view.view->steps, std::move(edges));
  meta.output_nr = 0;
  meta.requires_grad = true;
}

}  // namespace strata::autograd
