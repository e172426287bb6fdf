// Writing into an existing tensor (fill_, zero_, copy_) and copying into a new one
// (clone, to, contiguous).
#include "dispatcher/op_def.h"
#include "ops/elementwise_kernels.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/overlap.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

const Tensor& fill__cpu(const Tensor& self, const Scalar& value) {
  STRATA_CHECK(is_floating_point(self.dtype()) || !value.is_floating_point(), "strata::fill_",
               "cannot fill a ", self.dtype(), " tensor with the floating-point value ", value);
  on_device::fill_kernel(self, value);
  self.impl()->bump_version();
  return self;
}

const Tensor& zero__composite(const Tensor& self) { return self.fill_(0); }

// On the GPU key either side may be on a GPU: the CUDA copy moves values between
// the host and the device.
const Tensor& copy__any(const Tensor& self, const Tensor& src, bool /*non_blocking*/) {
  DimVector shape = broadcast_shapes(self.sizes(), src.sizes(), "strata::copy_");
  STRATA_CHECK(IntArrayRef(shape) == self.sizes(), "strata::copy_", "source of shape ",
               shape_string(src.sizes()), " cannot be broadcast to the destination's shape ",
               shape_string(self.sizes()));
  check_no_internal_overlap(self, "strata::copy_");
  check_no_partial_overlap(self, src, "strata::copy_");
  on_device::copy_kernel(self, src);
  self.impl()->bump_version();
  return self;
}

const Tensor& copy__cpu(const Tensor& self, const Tensor& src, bool non_blocking) {
  STRATA_CHECK(src.device() == self.device(), "strata::copy_", "cannot copy a tensor on ",
               src.device(), " into one on ", self.device(), " with the CPU kernel");
  return copy__any(self, src, non_blocking);
}

// A contiguous copy, through empty and copy_, so it works on every backend.
Tensor clone_composite(const Tensor& self) {
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  out.copy_(self);
  return out;
}

// empty_like, not empty: inside vmap the copy is batched like self.
Tensor to_dtype_composite(const Tensor& self, ScalarType dtype) {
  if (self.dtype() == dtype) return self;
  Tensor out = empty_like(self, dtype);
  out.copy_(self);
  return out;
}

// A copy on `device` (the tensor itself if it is there already), through empty and
// copy_, whose CUDA kernel moves the values.
Tensor to_device_composite(const Tensor& self, Device device) {
  if (self.device() == device) return self;
  Tensor out = empty(self.sizes(), self.dtype(), device);
  out.copy_(self);
  return out;
}

Tensor contiguous_composite(const Tensor& self) {
  return self.is_contiguous() ? self : self.clone();
}

// ---- derivatives (Note [Derivative formulas]); zero_, to and contiguous
// differentiate through fill_, copy_ and clone.

using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

// fill_ overwrites every element of self: nothing flows back to the old values,
// and the new ones are constants, with a zero (undefined) tangent.
void overwrite_backward(BackwardContext&) {}
void overwrite_forward(ForwardContext&) {}

// The gradient passes unchanged to argument `arg`: self of clone, src of copy_
// (whose broadcast and dtype cast the caller of the formula undoes; self's old
// values, overwritten, get nothing). The tangent passes the other way, broadcast
// and cast to the output by the caller; tangents are never written in place, so
// the output's may share the input's.
template <size_t arg>
void pass_through_backward(BackwardContext& c) {
  c.set_grad(arg, c.grad());
}
template <size_t arg>
void pass_through_forward(ForwardContext& c) {
  c.set_tangent(0, c.tangent(arg));
}

template <size_t arg>
KernelFunction pass_through() {
  return derivative(
      {.backward = &pass_through_backward<arg>, .forward = &pass_through_forward<arg>});
}

// ---- batching rules (Note [Batching rules]) ---------------------------------------

// copy_ broadcasts src into self, so it is pointwise; but its own rule, as the
// pointwise one would cast a batched 0-dim self to src's dtype, a copy that the
// write would go to.
void copy_batched(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  const batching::VmapLevel at = batching::current_vmap_level("strata::copy_");
  const size_t first = stack.size() - op.schema().arguments().size();
  const Tensor self = stack[first].to_tensor();
  const batching::BatchedArg dst = batching::unwrap(self, at.level);
  const batching::BatchedArg src = batching::unwrap(stack[first + 1].to_tensor(), at.level);
  if (!dst.batched() && !src.batched()) {
    batching::call_below(op, stack);
    return;
  }
  batching::check_inplace_target("strata::copy_", dst, src.batched(), at.batch_size);
  stack[first] = batching::batch_first(dst);
  stack[first + 1] = batching::batch_first_padded(src, dst.logical_dim());
  batching::call_below(op, stack);
  stack.back() = self;
}

// ---- the rows (Note [One op, one place]): writes and copies move values without
// arithmetic on them, zero FLOPs. zero_, to and contiguous are defined by fill_,
// copy_ and clone.
//
// fill_ writes every element of its batched self, and clone copies each sample
// into a tensor of its shape: both are pointwise. The boxed rule puts clone's batch
// first, so that each sample is contiguous, as clone's result is (contiguous() and
// reshape() count on it).
const OpFamily kFillCopyOps("fill_copy", {
    {.schema = "fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
     .cpu = &fill__cpu,
     .cuda = &fill__cpu,
     .derivative = derivative({.backward = &overwrite_backward, .forward = &overwrite_forward}),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = &flops::zero},
    {.schema = "zero_(Tensor(a!) self) -> Tensor(a!)", .decomposition = &zero__composite},
    {.schema = "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
     .cpu = &copy__cpu,
     .cuda = &copy__any,
     .derivative = pass_through<1>(),
     .batching = KernelFunction::from_boxed(&copy_batched),
     .shape = &shape::same_as_self,
     .flops = &flops::zero},
    {.schema = "clone(Tensor self) -> Tensor",
     .all_backends = &clone_composite,
     .derivative = pass_through<0>(),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = &flops::zero},
    {.schema = "to.dtype(Tensor self, ScalarType dtype) -> Tensor",
     .decomposition = &to_dtype_composite},
    {.schema = "to.device(Tensor self, Device device) -> Tensor",
     .decomposition = &to_device_composite},
    {.schema = "contiguous(Tensor self) -> Tensor", .decomposition = &contiguous_composite},
});

}  // namespace

const Tensor& Tensor::fill_(const Scalar& value) const {
  static const auto op = Dispatcher::singleton()
                             .findSchemaOrThrow("strata::fill_", "Scalar")
                             .typed<const Tensor&(const Tensor&, const Scalar&)>();
  return op.call(*this, value);
}

const Tensor& Tensor::zero_() const {
  static const auto op = Dispatcher::singleton()
                             .findSchemaOrThrow("strata::zero_", "")
                             .typed<const Tensor&(const Tensor&)>();
  return op.call(*this);
}

const Tensor& Tensor::copy_(const Tensor& src) const {
  static const auto op = Dispatcher::singleton()
                             .findSchemaOrThrow("strata::copy_", "")
                             .typed<const Tensor&(const Tensor&, const Tensor&, bool)>();
  return op.call(*this, src, false);
}

Tensor Tensor::clone() const {
  return STRATA_OP("strata::clone", "", Tensor(const Tensor&)).call(*this);
}

Tensor Tensor::to(ScalarType dtype) const {
  return STRATA_OP("strata::to", "dtype", Tensor(const Tensor&, ScalarType)).call(*this, dtype);
}

Tensor Tensor::to(Device device) const {
  return STRATA_OP("strata::to", "device", Tensor(const Tensor&, Device)).call(*this, device);
}

Tensor Tensor::contiguous() const {
  return STRATA_OP("strata::contiguous", "", Tensor(const Tensor&)).call(*this);
}

}  // namespace strata
