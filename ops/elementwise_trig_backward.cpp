// The backward ops of sin and cos, for derivatives that nest:
//   sin_backward(grad, self) = grad * cos(self);
//   cos_backward(grad, self) = -grad * sin(self).
//
// Note [Backward ops with their own derivatives]
// sin's gradient written as grad * self.cos() is two ops at its level; differentiated
// again in forward mode (hessian = jacfwd(jacrev)) each takes a pass over the
// tangents: cos(self)'s tangent -sin(self) t first, then the product's. As one op
// with its own formulas the tangent is t_grad cos(self) + t_self (-grad sin(self)),
// one mul_add whose second factors are on the primals (under hessian those are
// vectors and the tangents [n, n]). The two ops differentiate into each other, so
// any order of derivative stays within them.
#include "dispatcher/op_def.h"
#include "ops/elementwise_backward.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using BackwardSig = Tensor(const Tensor&, const Tensor&);
constexpr const char* kSinBackward = "strata::sin_backward";
constexpr const char* kCosBackward = "strata::cos_backward";

// Below every transform the ops are their definitions, with self's sine or cosine
// taken in the dtype the two arguments promote to (not self's own: a Float32
// self against a Float64 gradient is computed in Float64).
Tensor promoted(const Tensor& self, const Tensor& grad) {
  const ScalarType dtype = result_type(grad, self);
  return self.dtype() == dtype ? self : self.to(dtype);
}
Tensor sin_backward_composite(const Tensor& grad, const Tensor& self) {
  return grad * promoted(self, grad).cos();
}
Tensor cos_backward_composite(const Tensor& grad, const Tensor& self) {
  return -(grad * promoted(self, grad).sin());
}

// ---- derivatives: d/dgrad and d/dself of each op, written with the other.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

// t_grad * d_grad + t_self * d_self over the arguments with a tangent, one pass;
// the partials are computed only for those arguments.
template <class GradPartial, class SelfPartial>
Tensor two_argument_tangent(const ForwardContext& c, const GradPartial& of_grad,
                            const SelfPartial& of_self) {
  const Tensor& t_grad = c.tangent(0);
  const Tensor& t_self = c.tangent(1);
  if (t_grad.defined() && t_self.defined()) return mul_add(t_grad, of_grad(), t_self, of_self());
  if (t_grad.defined()) return t_grad * of_grad();
  if (t_self.defined()) return t_self * of_self();
  return Tensor();
}

// d/dgrad = cos(self), d/dself = -grad sin(self).
void sin_backward_backward(BackwardContext& c) {
  if (c.needs_grad(0)) c.set_grad(0, sin_backward(c.grad(), c.input(1)));
  if (c.needs_grad(1)) c.set_grad(1, cos_backward(c.grad() * c.input(0), c.input(1)));
}
void sin_backward_forward(ForwardContext& c) {
  const Tensor& grad = c.input(0);
  const Tensor& self = c.input(1);
  c.set_tangent(0, two_argument_tangent(
                       c, [&] { return promoted(self, grad).cos(); },
                       [&] { return cos_backward(grad, self); }));
}

// d/dgrad = -sin(self), d/dself = -grad cos(self).
void cos_backward_backward(BackwardContext& c) {
  if (c.needs_grad(0)) c.set_grad(0, cos_backward(c.grad(), c.input(1)));
  if (c.needs_grad(1)) c.set_grad(1, -sin_backward(c.grad() * c.input(0), c.input(1)));
}
void cos_backward_forward(ForwardContext& c) {
  const Tensor& grad = c.input(0);
  const Tensor& self = c.input(1);
  c.set_tangent(0, two_argument_tangent(
                       c, [&] { return -promoted(self, grad).sin(); },
                       [&] { return -sin_backward(grad, self); }));
}

// ---- the rows (Note [One op, one place]). Pointwise in both tensors, batched by
// the boxed pointwise rule; a gradient is floating, so Int64 and Bool arguments
// give Float32, as cos and sin of them do.

const OpFamily kTrigBackwardOps("elementwise_trig_backward", {
    // The function's evaluation (one FLOP, as for sin and cos) and the product.
    {.schema = "sin_backward(Tensor grad, Tensor self) -> Tensor",
     .all_backends = &sin_backward_composite,
     .derivative = derivative({.backward = &sin_backward_backward,
                               .forward = &sin_backward_forward,
                               .saved_inputs = args(0, 1)}),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::pointwise_floating,
     .flops = &flops::per_output_element<2>},
    // The function's evaluation, the product and the negation.
    {.schema = "cos_backward(Tensor grad, Tensor self) -> Tensor",
     .all_backends = &cos_backward_composite,
     .derivative = derivative({.backward = &cos_backward_backward,
                               .forward = &cos_backward_forward,
                               .saved_inputs = args(0, 1)}),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::pointwise_floating,
     .flops = &flops::per_output_element<3>},
});

}  // namespace

Tensor sin_backward(const Tensor& grad, const Tensor& self) {
  return STRATA_OP(kSinBackward, "", BackwardSig).call(grad, self);
}

Tensor cos_backward(const Tensor& grad, const Tensor& self) {
  return STRATA_OP(kCosBackward, "", BackwardSig).call(grad, self);
}

}  // namespace strata
