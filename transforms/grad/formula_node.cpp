#include "transforms/grad/formula_node.h"

#include <sstream>

#include "tensor/error.h"

namespace strata::autograd {

// ---- BackwardContext ----------------------------------------------------------

size_t BackwardContext::slot(size_t arg, size_t element) const {
  STRATA_CHECK(
      arg < node_.call_.first_slot.size() && node_.call_.first_slot[arg] != FormulaNode::kNoSlot,
      node_.name().c_str(), "derivative formula asked for argument ", arg,
      ", which is not a tensor argument");
  return node_.call_.first_slot[arg] + element;
}

const Tensor& BackwardContext::grad(size_t output) const { return grads_out_.at(output); }

const Tensor& BackwardContext::input(size_t arg) const {
  STRATA_CHECK(node_.derivative_.saved_inputs >> arg & 1u, node_.name().c_str(),
               "derivative formula read argument ", arg, " without listing it in saved_inputs");
  return node_.call_.args.at(arg).to_tensor();
}

const std::vector<Tensor>& BackwardContext::input_list(size_t arg) const {
  STRATA_CHECK(node_.derivative_.saved_inputs >> arg & 1u, node_.name().c_str(),
               "derivative formula read argument ", arg, " without listing it in saved_inputs");
  return node_.call_.args.at(arg).to_tensor_list();
}

const Tensor& BackwardContext::output(size_t i) const {
  STRATA_CHECK(node_.derivative_.saved_outputs >> i & 1u, node_.name().c_str(),
               "derivative formula read output ", i, " without listing it in saved_outputs");
  return node_.call_.outputs.at(i).saved;
}

IntArrayRef BackwardContext::input_sizes(size_t arg, size_t element) const {
  return node_.call_.slots.at(slot(arg, element)).sizes;
}

ScalarType BackwardContext::input_dtype(size_t arg, size_t element) const {
  return node_.call_.slots.at(slot(arg, element)).dtype;
}

size_t BackwardContext::input_list_size(size_t arg) const {
  size_t first = slot(arg, 0);
  size_t end = node_.call_.slots.size();
  for (size_t a = arg + 1; a < node_.call_.first_slot.size(); ++a) {
    if (node_.call_.first_slot[a] != FormulaNode::kNoSlot) {
      end = node_.call_.first_slot[a];
      break;
    }
  }
  return end - first;
}

bool BackwardContext::needs_grad(size_t arg, size_t element) const {
  return node_.call_.slots.at(slot(arg, element)).needs_grad;
}

bool BackwardContext::same_tensor(size_t a, size_t b) const {
  if (input(a).impl() != input(b).impl()) return false;
  const Edge& edge_a = node_.next_edges()[slot(a, 0)];
  const Edge& edge_b = node_.next_edges()[slot(b, 0)];
  return edge_a.node && edge_a.node == edge_b.node && edge_a.input_nr == edge_b.input_nr;
}

void BackwardContext::set_grad(size_t arg, Tensor grad) { set_list_grad(arg, 0, std::move(grad)); }

void BackwardContext::set_list_grad(size_t arg, size_t element, Tensor grad) {
  const size_t s = slot(arg, element);
  if (node_.call_.slots[s].needs_grad) grads_in_.at(s) = std::move(grad);
}

// ---- FormulaNode ----------------------------------------------------------------

void FormulaNode::seal() {
  if (derivative_.saved_inputs == 0 && derivative_.saved_outputs == 0) return;
  for_each_saved([&](const Tensor& t, bool, size_t) { saved_versions_.push_back(t.version()); });
}

std::string FormulaNode::name() const { return op_.operator_name().to_string(); }

Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  STRATA_CHECK(lead >= 0, "sum_to", "cannot reduce a gradient of shape ",
               shape_string(grad.sizes()), " to shape ", shape_string(sizes));
  DimVector dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    const int64_t have = grad.size(lead + d);
    if (have == sizes[d]) continue;
    STRATA_CHECK(sizes[d] == 1, "sum_to", "cannot reduce a gradient of shape ",
                 shape_string(grad.sizes()), " to shape ", shape_string(sizes));
    dims.push_back(lead + d);
  }
  if (dims.empty()) return grad;
  Tensor summed = grad.sum(dims, /*keepdim=*/true);
  return lead > 0 ? summed.view(sizes) : summed;
}

}  // namespace strata::autograd
