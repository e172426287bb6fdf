// Comparisons, logical and/or, and where: elementwise ops of two (three) tensors
// whose output is Bool (where: the values' promoted dtype), with broadcasting and
// type promotion; C++ numbers take part as wrapped numbers.
#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_util.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using cpu::CompareOp;
using elementwise::InDtype;
using elementwise::kBinaryMethodRule;

using BinarySig = Tensor(const Tensor&, const Tensor&);

constexpr const char* op_name(CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return "strata::eq";
    case CompareOp::Ne: return "strata::ne";
    case CompareOp::Lt: return "strata::lt";
    case CompareOp::Le: return "strata::le";
    case CompareOp::Gt: return "strata::gt";
    case CompareOp::Ge: return "strata::ge";
    case CompareOp::LogicalAnd: return "strata::logical_and";
    case CompareOp::LogicalOr: return "strata::logical_or";
  }
  return "?";
}

// Comparisons and logical ops compare in the promoted dtype and give Bool.
template <CompareOp kOp>
Tensor compare_cpu(const Tensor& a, const Tensor& b) {
  const char* name = op_name(kOp);
  const ScalarType dtype = result_type(a, b);
  Tensor out =
      make_empty_tensor(broadcast_shapes(a.sizes(), b.sizes(), name), kBool,
                        on_device::result_device(a, b), name);
  on_device::compare_kernel(kOp, out, InDtype(a, dtype), InDtype(b, dtype));
  return out;
}

// where's result takes the values' promoted dtype; the condition only broadcasts.
TensorMeta where_meta(const Tensor& condition, const Tensor& a, const Tensor& b) {
  STRATA_CHECK(condition.dtype() == kBool, "strata::where", "condition must be a Bool tensor, got ",
               condition.dtype());
  const DimVector sizes = broadcast_shapes(
      broadcast_shapes(condition.sizes(), a.sizes(), "strata::where"), b.sizes(), "strata::where");
  return {sizes, result_type(a, b)};
}

MetaList where_shape(OpArgs args) {
  return {where_meta(shape::tensor_arg(args, 0), shape::tensor_arg(args, 1),
                     shape::tensor_arg(args, 2))};
}

Tensor where_cpu(const Tensor& condition, const Tensor& a, const Tensor& b) {
  const TensorMeta meta = where_meta(condition, a, b);
  Tensor out = make_empty_tensor(meta.sizes, meta.dtype, on_device::result_device(condition, a, b),
                                 "strata::where");
  on_device::where_kernel(out, condition, InDtype(a, meta.dtype), InDtype(b, meta.dtype));
  return out;
}

// ---- derivatives (Note [Derivative formulas]) ----

using autograd::args;
using autograd::BackwardContext;
using autograd::ForwardContext;

void where_backward(BackwardContext& c) {
  const Tensor& condition = c.input(0);
  Tensor zero = zeros_like(c.grad());
  if (c.needs_grad(1)) c.set_grad(1, where(condition, c.grad(), zero));
  if (c.needs_grad(2)) c.set_grad(2, where(condition, zero, c.grad()));
}

// Linear in the two values, but not linear_forward: a value of another dtype (a
// Bool branch) is a constant here, with a zero tangent, not an index to keep.
void where_forward(ForwardContext& c) {
  c.set_tangent(0, where(c.input(0), c.tangent_or_zeros(1), c.tangent_or_zeros(2)));
}

// ---- the rows (Note [One op, one place]) ----

// A comparison counts one FLOP per output element, as arithmetic does. Its
// batching rule is the unboxed pointwise one; where's (three tensors) the boxed one.
OpDef comparison(const char* schema, Kernel cpu, Kernel batching) {
  return {.schema = schema,
          .cpu = cpu,
          .cuda = std::move(cpu),
          .derivative = {autograd::non_differentiable(), "not differentiable: Bool output"},
          .batching = std::move(batching),
          .shape = &shape::pointwise_bool,
          .flops = &flops::per_output_element<1>};
}

const OpFamily kCompareOps("elementwise_compare", {
    comparison("eq.Tensor(Tensor self, Tensor other) -> Tensor", &compare_cpu<CompareOp::Eq>,
               kBinaryMethodRule<&Tensor::eq>),
    comparison("ne.Tensor(Tensor self, Tensor other) -> Tensor", &compare_cpu<CompareOp::Ne>,
               kBinaryMethodRule<&Tensor::ne>),
    comparison("lt.Tensor(Tensor self, Tensor other) -> Tensor", &compare_cpu<CompareOp::Lt>,
               kBinaryMethodRule<&Tensor::lt>),
    comparison("le.Tensor(Tensor self, Tensor other) -> Tensor", &compare_cpu<CompareOp::Le>,
               kBinaryMethodRule<&Tensor::le>),
    comparison("gt.Tensor(Tensor self, Tensor other) -> Tensor", &compare_cpu<CompareOp::Gt>,
               kBinaryMethodRule<&Tensor::gt>),
    comparison("ge.Tensor(Tensor self, Tensor other) -> Tensor", &compare_cpu<CompareOp::Ge>,
               kBinaryMethodRule<&Tensor::ge>),
    comparison("logical_and(Tensor self, Tensor other) -> Tensor",
               &compare_cpu<CompareOp::LogicalAnd>, kBinaryMethodRule<&Tensor::logical_and>),
    comparison("logical_or(Tensor self, Tensor other) -> Tensor",
               &compare_cpu<CompareOp::LogicalOr>, kBinaryMethodRule<&Tensor::logical_or>),
    {.schema = "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
     .cpu = &where_cpu,
     .cuda = &where_cpu,
     .derivative = autograd::derivative(
         {.backward = &where_backward, .forward = &where_forward, .saved_inputs = args(0)}),
     .batching = batching::pointwise_batch_rule(),
     .shape = &where_shape,
     .flops = &flops::zero},
});

}  // namespace

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::where", "self", Tensor(const Tensor&, const Tensor&, const Tensor&))
      .call(condition, a, b);
}

Tensor Tensor::eq(const Tensor& other) const {
  return STRATA_OP("strata::eq", "Tensor", BinarySig).call(*this, other);
}
Tensor Tensor::ne(const Tensor& other) const {
  return STRATA_OP("strata::ne", "Tensor", BinarySig).call(*this, other);
}
Tensor Tensor::lt(const Tensor& other) const {
  return STRATA_OP("strata::lt", "Tensor", BinarySig).call(*this, other);
}
Tensor Tensor::le(const Tensor& other) const {
  return STRATA_OP("strata::le", "Tensor", BinarySig).call(*this, other);
}
Tensor Tensor::gt(const Tensor& other) const {
  return STRATA_OP("strata::gt", "Tensor", BinarySig).call(*this, other);
}
Tensor Tensor::ge(const Tensor& other) const {
  return STRATA_OP("strata::ge", "Tensor", BinarySig).call(*this, other);
}
Tensor Tensor::logical_and(const Tensor& other) const {
  return STRATA_OP("strata::logical_and", "", BinarySig).call(*this, other);
}
Tensor Tensor::logical_or(const Tensor& other) const {
  return STRATA_OP("strata::logical_or", "", BinarySig).call(*this, other);
}

Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return a.eq(wrapped_scalar_tensor(b)); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return a.ne(wrapped_scalar_tensor(b)); }
Tensor operator<(const Tensor& a, const Scalar& b) { return a.lt(wrapped_scalar_tensor(b)); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return a.le(wrapped_scalar_tensor(b)); }
Tensor operator>(const Tensor& a, const Scalar& b) { return a.gt(wrapped_scalar_tensor(b)); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return a.ge(wrapped_scalar_tensor(b)); }
Tensor operator&&(const Tensor& a, const Tensor& b) { return a.logical_and(b); }
Tensor operator||(const Tensor& a, const Tensor& b) { return a.logical_or(b); }

}  // namespace strata
