// Writing into an existing tensor (fill_, zero_, copy_) and copying into a new one
// (clone, to, contiguous).
#include "dispatcher/library.h"
#include "kernels/cpu/elementwise.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"

namespace strata {
namespace {

const Tensor& fill__cpu(const Tensor& self, const Scalar& value) {
  STRATA_CHECK(is_floating_point(self.dtype()) || !value.is_floating_point(), "strata::fill_",
               "cannot fill a ", self.dtype(), " tensor with the floating-point value ", value);
  cpu::fill_kernel(self, value);
  self.impl()->bump_version();
  return self;
}

const Tensor& zero__composite(const Tensor& self) { return self.fill_(0); }

const Tensor& copy__cpu(const Tensor& self, const Tensor& src, bool /*non_blocking*/) {
  STRATA_CHECK(src.device() == self.device(), "strata::copy_", "cannot copy a tensor on ",
               src.device(), " into one on ", self.device(), " with the CPU kernel");
  DimVector shape = broadcast_shapes(self.sizes(), src.sizes(), "strata::copy_");
  STRATA_CHECK(IntArrayRef(shape) == self.sizes(), "strata::copy_", "source of shape ",
               shape_string(src.sizes()), " cannot be broadcast to the destination's shape ",
               shape_string(self.sizes()));
  cpu::copy_kernel(self, src);
  self.impl()->bump_version();
  return self;
}

// A contiguous copy, through empty and copy_, so it works on every backend.
Tensor clone_composite(const Tensor& self) {
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  out.copy_(self);
  return out;
}

Tensor to_dtype_composite(const Tensor& self, ScalarType dtype) {
  if (self.dtype() == dtype) return self;
  Tensor out = empty(self.sizes(), dtype, self.device());
  out.copy_(self);
  return out;
}

Tensor contiguous_composite(const Tensor& self) {
  return self.is_contiguous() ? self : self.clone();
}

STRATA_LIBRARY(strata, m) {
  m.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)");
  m.def("zero_(Tensor(a!) self) -> Tensor(a!)");
  m.def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)");
  m.def("clone(Tensor self) -> Tensor");
  m.def("to.dtype(Tensor self, ScalarType dtype) -> Tensor");
  m.def("contiguous(Tensor self) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("fill_.Scalar", &fill__cpu);
  m.impl("copy_", &copy__cpu);
}

STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) { m.impl("clone", &clone_composite); }

STRATA_LIBRARY_IMPL(strata, CompositeImplicitAutograd, m) {
  m.impl("zero_", &zero__composite);
  m.impl("to.dtype", &to_dtype_composite);
  m.impl("contiguous", &contiguous_composite);
}

// ---- derivatives (Note [Derivative formulas]); zero_, to and contiguous
// differentiate through fill_, copy_ and clone.

using autograd::BackwardContext;
using autograd::derivative;

// fill_ overwrites every element of self: nothing flows back to the old values.
void overwrite_backward(BackwardContext&) {}

// The gradient passes unchanged to argument `arg`: self of clone, src of copy_
// (whose broadcast and dtype cast the caller of the formula undoes; self's old
// values, overwritten, get nothing).
template <size_t arg>
void pass_through_backward(BackwardContext& c) {
  c.set_grad(arg, c.grad());
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("fill_.Scalar", derivative({.backward = &overwrite_backward}));
  m.impl("copy_", derivative({.backward = &pass_through_backward<1>}));
  m.impl("clone", derivative({.backward = &pass_through_backward<0>}));
}

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

Tensor Tensor::contiguous() const {
  return STRATA_OP("strata::contiguous", "", Tensor(const Tensor&)).call(*this);
}

}  // namespace strata
