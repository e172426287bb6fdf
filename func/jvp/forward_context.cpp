// ForwardContext (declared in transforms/grad/derivative.h) and the forward
// formulas many ops share. Here, above ops/, because they make zero tangents
// with zeros_like (Note [Operator calls live above ops/]).
#include <vector>

#include "dispatcher/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "tensor/error.h"
#include "transforms/grad/derivative.h"

namespace strata::autograd {

const Tensor& ForwardContext::tangent(size_t arg) const {
  static const Tensor kNone;
  const IValue& t = tangents_[arg];
  return t.is_tensor() ? t.to_tensor() : kNone;
}

Tensor ForwardContext::tangent_or_zeros(size_t arg) const {
  const Tensor& t = tangent(arg);
  return t.defined() ? t : zeros_like(input(arg));
}

const std::vector<Tensor>& ForwardContext::list_tangents(size_t arg) const {
  return tangents_[arg].to_tensor_list();
}

bool ForwardContext::list_has_tangent(size_t arg) const {
  for (const Tensor& t : list_tangents(arg)) {
    if (t.defined()) return true;
  }
  return false;
}

void ForwardContext::set_tangent(size_t output, Tensor tangent) {
  STRATA_CHECK(output < outputs_.size(), op_.operator_name().to_string().c_str(),
               "internal: forward formula set the tangent of output ", output, " of ",
               outputs_.size());
  const Tensor& out = outputs_[output];
  if (tangent.defined()) {
    if (tangent.sizes() != out.sizes()) tangent = tangent.expand(out.sizes());
    if (tangent.dtype() != out.dtype()) tangent = tangent.to(out.dtype());
  }
  output_tangents_[output] = std::move(tangent);
}

Tensor sum_defined(Tensor a, const Tensor& b) {
  if (!a.defined()) return b;
  return b.defined() ? a + b : a;
}

void linear_forward(ForwardContext& c) {
  const OperatorHandle& op = c.op();
  STRATA_CHECK(!op.entry().returned_argument_index(), op.operator_name().to_string().c_str(),
               "internal: linear_forward is for out-of-place ops");
  Stack stack;
  const size_t nargs = op.schema().arguments().size();
  stack.reserve(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const IValue& a = c.arg(i);
    if (a.is_tensor() && a.to_tensor().defined() && is_floating_point(a.to_tensor().dtype())) {
      stack.emplace_back(c.tangent_or_zeros(i));
    } else if (a.is_tensor_list()) {
      // Every element of a list is data (there are no index lists): one
      // without a tangent, integer ones included, contributes zeros.
      std::vector<Tensor> list = a.to_tensor_list();
      for (size_t e = 0; e < list.size(); ++e) {
        const Tensor& t = c.list_tangents(i)[e];
        list[e] = t.defined() ? t : zeros_like(list[e]);
      }
      stack.emplace_back(std::move(list));
    } else {
      stack.push_back(a);
    }
  }
  op.call_boxed(stack);
  for (size_t i = 0, out = 0; i < stack.size(); ++i) {
    if (stack[i].is_tensor()) c.set_tangent(out++, std::move(stack[i].to_tensor()));
  }
}

}  // namespace strata::autograd
