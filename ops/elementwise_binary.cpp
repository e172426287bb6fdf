// add and mul: out-of-place and in-place, with broadcasting and type promotion.
#include "dispatcher/library.h"
#include "kernels/cpu/elementwise.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"

namespace strata {
namespace {

using BinarySig = Tensor(const Tensor&, const Tensor&);
using BinaryAlphaSig = Tensor(const Tensor&, const Tensor&, const Scalar&);
using InplaceSig = const Tensor&(const Tensor&, const Tensor&);
using InplaceAlphaSig = const Tensor&(const Tensor&, const Tensor&, const Scalar&);

// The input in the compute dtype: itself when it already is, else a converted copy.
Tensor as_dtype(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor converted = make_empty_tensor(t.sizes(), dtype, t.device(), "strata::to");
  cpu::copy_kernel(converted, t);
  return converted;
}

void check_alpha(const Scalar& alpha, ScalarType dtype, const char* op) {
  STRATA_CHECK(is_floating_point(dtype) || !alpha.is_floating_point(), op, "alpha ", alpha,
               " is a floating-point number but the result dtype is ", dtype);
}

template <class Kernel>
Tensor binary_out_of_place(const Tensor& a, const Tensor& b, const char* op, Kernel&& kernel) {
  const ScalarType dtype = result_type(a, b);
  Tensor out = make_empty_tensor(broadcast_shapes(a.sizes(), b.sizes(), op), dtype, a.device(), op);
  kernel(out, as_dtype(a, dtype), as_dtype(b, dtype));
  return out;
}

template <class Kernel>
const Tensor& binary_in_place(const Tensor& self, const Tensor& other, const char* op,
                              Kernel&& kernel) {
  const ScalarType dtype = result_type(self, other);
  STRATA_CHECK(promote_types(dtype, self.dtype()) == self.dtype(), op, "result dtype ", dtype,
               " cannot be written in place into a ", self.dtype(), " tensor");
  DimVector shape = broadcast_shapes(self.sizes(), other.sizes(), op);
  STRATA_CHECK(IntArrayRef(shape) == self.sizes(), op, "in-place output of shape ",
               shape_string(self.sizes()), " cannot hold the broadcast result of shape ",
               shape_string(shape), " (other has shape ", shape_string(other.sizes()), ")");
  kernel(self, self, as_dtype(other, self.dtype()));
  self.impl()->bump_version();
  return self;
}

Tensor add_cpu(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary_out_of_place(a, b, "strata::add", [&](const Tensor& o, const Tensor& x, const Tensor& y) {
    check_alpha(alpha, o.dtype(), "strata::add");
    cpu::add_kernel(o, x, y, alpha);
  });
}

const Tensor& add__cpu(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_alpha(alpha, self.dtype(), "strata::add_");
  return binary_in_place(self, other, "strata::add_",
                         [&](const Tensor& o, const Tensor& x, const Tensor& y) {
                           cpu::add_kernel(o, x, y, alpha);
                         });
}

Tensor mul_cpu(const Tensor& a, const Tensor& b) {
  return binary_out_of_place(a, b, "strata::mul", &cpu::mul_kernel);
}

const Tensor& mul__cpu(const Tensor& self, const Tensor& other) {
  return binary_in_place(self, other, "strata::mul_", &cpu::mul_kernel);
}

STRATA_LIBRARY(strata, m) {
  m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("mul.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("add.Tensor", &add_cpu);
  m.impl("add_.Tensor", &add__cpu);
  m.impl("mul.Tensor", &mul_cpu);
  m.impl("mul_.Tensor", &mul__cpu);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  static const auto op =
      Dispatcher::singleton().findSchemaOrThrow("strata::add", "Tensor").typed<BinaryAlphaSig>();
  return op.call(a, b, alpha);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  static const auto op =
      Dispatcher::singleton().findSchemaOrThrow("strata::mul", "Tensor").typed<BinarySig>();
  return op.call(a, b);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }

Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const {
  return strata::add(*this, other, alpha);
}

Tensor Tensor::mul(const Tensor& other) const { return strata::mul(*this, other); }

const Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) const {
  static const auto op =
      Dispatcher::singleton().findSchemaOrThrow("strata::add_", "Tensor").typed<InplaceAlphaSig>();
  return op.call(*this, other, alpha);
}

const Tensor& Tensor::mul_(const Tensor& other) const {
  static const auto op =
      Dispatcher::singleton().findSchemaOrThrow("strata::mul_", "Tensor").typed<InplaceSig>();
  return op.call(*this, other);
}

}  // namespace strata
