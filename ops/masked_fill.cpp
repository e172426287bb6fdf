// masked_fill(_): self with the positions where a Bool mask is true set to a
// value. Pointwise in self and mask (the out-of-place form broadcasts them
// together).
#include "dispatcher/op_def.h"
#include "kernels/cpu/indexing.h"
#include "kernels/cuda/indexing.h"
#include "ops/device_choice.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using MaskedFillSig = Tensor(const Tensor&, const Tensor&, const Scalar&);
using MaskedFillInplaceSig = const Tensor&(const Tensor&, const Tensor&, const Scalar&);

void check_masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value,
                       const char* op) {
  STRATA_CHECK(mask.dtype() == kBool, op, "mask must be a Bool tensor, got ", mask.dtype(),
               " (shape ", shape_string(mask.sizes()), ")");
  STRATA_CHECK(mask.device() == self.device(), op, "mask is on ", mask.device(), " but self is on ",
               self.device());
  STRATA_CHECK(is_floating_point(self.dtype()) || !value.is_floating_point(), op, "cannot fill a ",
               self.dtype(), " tensor with the floating-point value ", value);
}

// Like PyTorch, the out-of-place form broadcasts self and mask together; the
// result keeps self's dtype.
DimVector masked_fill_sizes(const Tensor& self, const Tensor& mask, const Scalar& value) {
  const char* op = "strata::masked_fill";
  check_masked_fill(self, mask, value, op);
  return broadcast_shapes(self.sizes(), mask.sizes(), op);
}

Tensor masked_fill_cpu(const Tensor& self, const Tensor& mask, const Scalar& value) {
  Tensor out = make_empty_tensor(masked_fill_sizes(self, mask, value), self.dtype(),
                                 self.device(), "strata::masked_fill");
  (on_device::any_cuda(out, self, mask) ? gpu::masked_fill_kernel : cpu::masked_fill_kernel)(
      out, self, mask, value);
  return out;
}

const Tensor& masked_fill__cpu(const Tensor& self, const Tensor& mask, const Scalar& value) {
  const char* op = "strata::masked_fill_";
  check_masked_fill(self, mask, value, op);
  const DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), op);
  STRATA_CHECK(IntArrayRef(shape) == self.sizes(), op, "mask of shape ", shape_string(mask.sizes()),
               " cannot be broadcast to self's shape ", shape_string(self.sizes()));
  (on_device::any_cuda(self, mask) ? gpu::masked_fill_kernel : cpu::masked_fill_kernel)(
      self, self, mask, value);
  self.impl()->bump_version();
  return self;
}

// ---- derivatives (Note [Derivative formulas]): filled positions no longer
// depend on self; the mask never gets a gradient.

using autograd::BackwardContext;
using autograd::ForwardContext;

void masked_fill_backward(BackwardContext& c) {
  c.set_grad(0, c.grad().masked_fill(c.input(1), 0));
}
void masked_fill_forward(ForwardContext& c) {
  if (c.has_tangent(0)) c.set_tangent(0, c.tangent(0).masked_fill(c.input(1), 0));
}

// ---- the rows (Note [One op, one place]): a select between self and the value,
// zero FLOPs; one boxed pointwise rule batches both forms.

KernelFunction masked_fill_derivative() {
  return autograd::derivative({.backward = &masked_fill_backward,
                               .forward = &masked_fill_forward,
                               .saved_inputs = autograd::args(1)});
}

MetaList masked_fill_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  return shape::single(masked_fill_sizes(self, shape::tensor_arg(args, 1), args[2].to_scalar()),
                       self.dtype());
}

const OpFamily kMaskedFillOps("masked_fill", {
    {.schema = "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
     .cpu = &masked_fill_cpu,
     .cuda = &masked_fill_cpu,
     .derivative = masked_fill_derivative(),
     .batching = batching::pointwise_batch_rule(),
     .shape = &masked_fill_shape,
     .flops = &flops::zero},
    {.schema = "masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
     .cpu = &masked_fill__cpu,
     .cuda = &masked_fill__cpu,
     .derivative = masked_fill_derivative(),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = &flops::zero},
});

}  // namespace

Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return STRATA_OP("strata::masked_fill", "Scalar", MaskedFillSig).call(*this, mask, value);
}

const Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  return STRATA_OP("strata::masked_fill_", "Scalar", MaskedFillInplaceSig).call(*this, mask, value);
}

}  // namespace strata
