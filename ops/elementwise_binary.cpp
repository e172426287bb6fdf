// Binary elementwise operators: arithmetic (out-of-place and in-place),
// atan2; broadcasting and type promotion, with C++ numbers taking part as wrapped
// numbers. Comparisons, logical ops and where: ops/elementwise_compare.cpp.
#include <cmath>

#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/elementwise_map.h"
#include "ops/elementwise_backward.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_util.h"
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

using cpu::BinaryOp;
using elementwise::InDtype;

using BinarySig = Tensor(const Tensor&, const Tensor&);
using BinaryAlphaSig = Tensor(const Tensor&, const Tensor&, const Scalar&);
using InplaceSig = const Tensor&(const Tensor&, const Tensor&);
using InplaceAlphaSig = const Tensor&(const Tensor&, const Tensor&, const Scalar&);

constexpr const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "strata::add";
    case BinaryOp::Sub: return "strata::sub";
    case BinaryOp::Mul: return "strata::mul";
    case BinaryOp::Div: return "strata::div";
    case BinaryOp::Pow: return "strata::pow";
    case BinaryOp::Maximum: return "strata::maximum";
    case BinaryOp::Minimum: return "strata::minimum";
  }
  return "?";
}

constexpr const char* in_place_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "strata::add_";
    case BinaryOp::Sub: return "strata::sub_";
    case BinaryOp::Mul: return "strata::mul_";
    case BinaryOp::Div: return "strata::div_";
    case BinaryOp::Pow: return "strata::pow_";
    default: return op_name(op);
  }
}

// The dtype `op` computes in for a and b: their promoted dtype, floating for div.
ScalarType arithmetic_dtype(BinaryOp op, const Tensor& a, const Tensor& b, const Scalar& alpha,
                            const char* name) {
  const ScalarType promoted = result_type(a, b);
  switch (op) {
    case BinaryOp::Div: return elementwise::floating_dtype(promoted);
    case BinaryOp::Sub:
    case BinaryOp::Pow: elementwise::check_not_bool(promoted, name); break;
    default: break;
  }
  if (op == BinaryOp::Add || op == BinaryOp::Sub) elementwise::check_alpha(alpha, promoted, name);
  return promoted;
}

// The op functions below serve every backend (registered as both cpu and cuda):
// on_device (ops/elementwise_kernels.h) calls the kernel of the output's device.
Tensor arithmetic(BinaryOp op, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  const char* name = op_name(op);
  const ScalarType dtype = arithmetic_dtype(op, a, b, alpha, name);
  Tensor out =
      make_empty_tensor(broadcast_shapes(a.sizes(), b.sizes(), name), dtype,
                        on_device::result_device(a, b), name);
  on_device::binary_kernel(op, out, InDtype(a, dtype), InDtype(b, dtype), alpha);
  return out;
}

// Computes in self's dtype; the result dtype only has to keep its category.
const Tensor& arithmetic_in_place(BinaryOp op, const Tensor& self, const Tensor& other,
                                  const Scalar& alpha) {
  const char* name = in_place_name(op);
  const ScalarType dtype = arithmetic_dtype(op, self, other, alpha, name);
  elementwise::check_in_place(self, dtype, broadcast_shapes(self.sizes(), other.sizes(), name),
                              name);
  check_no_partial_overlap(self, other, name);
  on_device::binary_kernel(op, self, self, InDtype(other, self.dtype()), alpha);
  self.impl()->bump_version();
  return self;
}

template <BinaryOp kOp>
Tensor arithmetic_cpu(const Tensor& a, const Tensor& b) {
  return arithmetic(kOp, a, b, 1);
}
template <BinaryOp kOp>
Tensor arithmetic_alpha_cpu(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return arithmetic(kOp, a, b, alpha);
}
template <BinaryOp kOp>
const Tensor& in_place_cpu(const Tensor& self, const Tensor& other) {
  return arithmetic_in_place(kOp, self, other, 1);
}
template <BinaryOp kOp>
const Tensor& in_place_alpha_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return arithmetic_in_place(kOp, self, other, alpha);
}

// atan2(a, b): the angle of the point (b, a), in the floating dtype of div.
Tensor atan2_cpu(const Tensor& a, const Tensor& b) {
  const char* name = "strata::atan2";
  const ScalarType dtype = elementwise::floating_dtype(result_type(a, b));
  Tensor out =
      make_empty_tensor(broadcast_shapes(a.sizes(), b.sizes(), name), dtype,
                        on_device::result_device(a, b), name);
  if (out.device().is_cuda()) {
    gpu::atan2_kernel(out, InDtype(a, dtype), InDtype(b, dtype));
  } else {
    cpu::binary_floating_map(out, InDtype(a, dtype), InDtype(b, dtype), name,
                             [](auto y, auto x) { return std::atan2(y, x); });
  }
  return out;
}

// atan2_(self, other): self must hold the floating result itself.
const Tensor& atan2__cpu(const Tensor& self, const Tensor& other) {
  const char* name = "strata::atan2_";
  const ScalarType dtype = elementwise::floating_dtype(result_type(self, other));
  elementwise::check_in_place(self, dtype, broadcast_shapes(self.sizes(), other.sizes(), name),
                              name);
  check_no_partial_overlap(self, other, name);
  if (self.device().is_cuda()) {
    gpu::atan2_kernel(self, InDtype(self, self.dtype()), InDtype(other, self.dtype()));
  } else {
    on_device::check_host_inputs(name, self, other);
    cpu::binary_floating_map(self, InDtype(self, self.dtype()), InDtype(other, self.dtype()), name,
                             [](auto y, auto x) { return std::atan2(y, x); });
  }
  self.impl()->bump_version();
  return self;
}

// ---- derivatives (Note [Derivative formulas]); broadcast gradients are summed
// back to each input's shape by the caller of the formula.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;
using autograd::sum_defined;

// A binary pointwise op's gradient and tangent both go through its partial
// derivatives: Partials::apply(c, arg, t) is t times d out / d argument `arg`
// (arg 0 or 1), from the call's inputs, output and scalars as either context
// holds them. Backward applies it to the gradient per input, forward sums it over
// the inputs' tangents.
template <class Partials>
void backward_by(BackwardContext& c) {
  for (size_t arg : {0, 1}) {
    if (c.needs_grad(arg)) c.set_grad(arg, Partials::apply(c, arg, c.grad()));
  }
}
template <class Partials>
void forward_by(ForwardContext& c) {
  Tensor tangent;
  for (size_t arg : {0, 1}) {
    if (c.has_tangent(arg)) {
      tangent = sum_defined(std::move(tangent), Partials::apply(c, arg, c.tangent(arg)));
    }
  }
  c.set_tangent(0, std::move(tangent));
}
template <class Partials>
KernelFunction by_partials(uint32_t saved_inputs, uint32_t saved_outputs = 0) {
  return derivative({.backward = &backward_by<Partials>,
                     .forward = &forward_by<Partials>,
                     .saved_inputs = saved_inputs,
                     .saved_outputs = saved_outputs});
}

// other's partial is alpha (negated for sub); alpha is nearly always 1, and then
// t passes through without an op.
template <int kSign>
struct AddPartials {
  template <class C>
  static Tensor apply(const C& c, size_t arg, const Tensor& t) {
    return arg == 0 ? t : elementwise::scaled(t, kSign * c.scalar_arg(2).template to<double>());
  }
};

struct MulPartials {
  template <class C>
  static Tensor apply(const C& c, size_t arg, const Tensor& t) {
    return t * c.input(1 - arg);
  }
};

// x * x: one gradient 2 g x for x instead of g x twice and their sum, a backward
// op and an accumulation fewer (under hessian each is a pass over the basis). It
// is written g x + g x, one mul_add whose tangent is one pass too (Note [Repeated
// products], ops/elementwise_fused.cpp), where g * 2x took a pass for 2 t_x first.
void mul_backward(BackwardContext& c) {
  if (c.needs_grad(0) && c.needs_grad(1) && c.same_tensor(0, 1)) {
    return c.set_grad(0, mul_add(c.grad(), c.input(0), c.grad(), c.input(0)));
  }
  backward_by<MulPartials>(c);
}

// t_a b + a t_b in one pass over the tangents (ops/elementwise_fused.cpp); for
// x * x, 2 x t_x, whose 2 x is on the primal.
void mul_forward(ForwardContext& c) {
  if (!c.has_tangent(0) || !c.has_tangent(1)) return forward_by<MulPartials>(c);
  if (c.input(0).impl() == c.input(1).impl() && c.tangent(0).impl() == c.tangent(1).impl()) {
    return c.set_tangent(0, c.tangent(0) * elementwise::scaled(c.input(0), 2.0));
  }
  c.set_tangent(0, mul_add(c.tangent(0), c.input(1), c.input(0), c.tangent(1)));
}

struct DivPartials {
  template <class C>
  static Tensor apply(const C& c, size_t arg, const Tensor& t) {
    const Tensor& other = c.input(1);
    return arg == 0 ? t / other : -(t * c.output()) / other;
  }
};

// Both partials read the base in the dtype the kernel computed in (an Int64 base
// with a Float64 exponent computes in Float64).
struct PowPartials {
  template <class C>
  static Tensor apply(const C& c, size_t arg, const Tensor& t) {
    const ScalarType dtype = c.output().dtype();
    const Tensor base = c.input(0).to(dtype);
    const Tensor exponent = c.input(1).to(dtype);
    const Tensor at_zero = base == 0.0;
    if (arg == 0) {
      // d/dx x^e = e x^(e-1). x^e is discontinuous at 0^0; taking the base as 1
      // there gives 0 instead of 0 * inf, which an outer grad would also multiply in.
      const Tensor safe_base = where(at_zero.logical_and(exponent == 0.0), ones_like(base), base);
      return t * exponent * safe_base.pow(exponent - 1.0);
    }
    // d/de x^e = x^e log x, which is 0 at x = 0 (the limit for e > 0): the log is
    // taken of 1 there, so no -inf reaches an outer grad either.
    const Tensor safe_base = where(at_zero, ones_like(base), base);
    return t * c.output() * safe_base.log();
  }
};

// d atan2(a, b) = (b da - a db) / (a^2 + b^2).
struct Atan2Partials {
  template <class C>
  static Tensor apply(const C& c, size_t arg, const Tensor& t) {
    const Tensor& a = c.input(0);
    const Tensor& b = c.input(1);
    const Tensor norm2 = a * a + b * b;
    return arg == 0 ? t * b / norm2 : -(t * a) / norm2;
  }
};

// maximum/minimum: all of it goes to the selected input; ties split it.
template <bool kMax>
struct SelectPartials {
  template <class C>
  static Tensor apply(const C& c, size_t arg, const Tensor& t) {
    const Tensor& mine = c.input(arg);
    const Tensor& other = c.input(1 - arg);
    return t * ((kMax ? mine > other : mine < other) + (mine == other) * 0.5);
  }
};

// ---- batching rules (Note [Batching rules]): every op here is pointwise. The
// out-of-place ops take the unboxed rule, which calls the op on the aligned
// batches without boxing; the in-place ops (which write into their batched self)
// take the boxed one.

using elementwise::kBinaryRule;
using elementwise::kBinaryMethodRule;

// ---- the rows (Note [One op, one place]) ----

KernelFunction mul_derivative() {
  return derivative({.backward = &mul_backward, .forward = &mul_forward, .saved_inputs = args(0, 1)});
}

// Arithmetic counts one FLOP per output element.
constexpr FlopFn kOnePerElement = &flops::per_output_element<1>;

const OpFamily kBinaryOps("elementwise_binary", {
    {.schema = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
     .cpu = &arithmetic_alpha_cpu<BinaryOp::Add>,
     .cuda = &arithmetic_alpha_cpu<BinaryOp::Add>,
     .derivative = by_partials<AddPartials<1>>(0),
     .batching = kBinaryRule<&strata::add>,
     .shape = &shape::pointwise,
     .flops = kOnePerElement},
    {.schema = "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
     .cpu = &in_place_alpha_cpu<BinaryOp::Add>,
     .cuda = &in_place_alpha_cpu<BinaryOp::Add>,
     .derivative = by_partials<AddPartials<1>>(0),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = kOnePerElement},
    {.schema = "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
     .cpu = &arithmetic_alpha_cpu<BinaryOp::Sub>,
     .cuda = &arithmetic_alpha_cpu<BinaryOp::Sub>,
     .derivative = by_partials<AddPartials<-1>>(0),
     .batching = kBinaryRule<&strata::sub>,
     .shape = &shape::pointwise,
     .flops = kOnePerElement},
    {.schema = "sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
     .cpu = &in_place_alpha_cpu<BinaryOp::Sub>,
     .cuda = &in_place_alpha_cpu<BinaryOp::Sub>,
     .derivative = by_partials<AddPartials<-1>>(0),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = kOnePerElement},
    {.schema = "mul.Tensor(Tensor self, Tensor other) -> Tensor",
     .cpu = &arithmetic_cpu<BinaryOp::Mul>,
     .cuda = &arithmetic_cpu<BinaryOp::Mul>,
     .derivative = mul_derivative(),
     .batching = kBinaryRule<&strata::mul>,
     .shape = &shape::pointwise,
     .flops = kOnePerElement},
    {.schema = "mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
     .cpu = &in_place_cpu<BinaryOp::Mul>,
     .cuda = &in_place_cpu<BinaryOp::Mul>,
     .derivative = mul_derivative(),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = kOnePerElement},
    {.schema = "div.Tensor(Tensor self, Tensor other) -> Tensor",
     .cpu = &arithmetic_cpu<BinaryOp::Div>,
     .cuda = &arithmetic_cpu<BinaryOp::Div>,
     .derivative = by_partials<DivPartials>(args(1), args(0)),
     .batching = kBinaryRule<&strata::div>,
     .shape = &shape::pointwise_floating,
     .flops = kOnePerElement},
    {.schema = "div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
     .cpu = &in_place_cpu<BinaryOp::Div>,
     .cuda = &in_place_cpu<BinaryOp::Div>,
     .derivative = by_partials<DivPartials>(args(1), args(0)),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = kOnePerElement},
    {.schema = "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
     .cpu = &arithmetic_cpu<BinaryOp::Pow>,
     .cuda = &arithmetic_cpu<BinaryOp::Pow>,
     .derivative = by_partials<PowPartials>(args(0, 1), args(0)),
     .batching = kBinaryRule<static_cast<Tensor (*)(const Tensor&, const Tensor&)>(&strata::pow)>,
     .shape = &shape::pointwise,
     .flops = kOnePerElement},
    {.schema = "pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)",
     .cpu = &in_place_cpu<BinaryOp::Pow>,
     .cuda = &in_place_cpu<BinaryOp::Pow>,
     .derivative = by_partials<PowPartials>(args(0, 1), args(0)),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = kOnePerElement},
    {.schema = "atan2(Tensor self, Tensor other) -> Tensor",
     .cpu = &atan2_cpu,
     .cuda = &atan2_cpu,
     .derivative = by_partials<Atan2Partials>(args(0, 1)),
     .batching = kBinaryMethodRule<&Tensor::atan2>,
     .shape = &shape::pointwise_floating,
     .flops = kOnePerElement},
    {.schema = "atan2_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
     .cpu = &atan2__cpu,
     .cuda = &atan2__cpu,
     .derivative = by_partials<Atan2Partials>(args(0, 1)),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = kOnePerElement},
    {.schema = "maximum(Tensor self, Tensor other) -> Tensor",
     .cpu = &arithmetic_cpu<BinaryOp::Maximum>,
     .cuda = &arithmetic_cpu<BinaryOp::Maximum>,
     .derivative = by_partials<SelectPartials<true>>(args(0, 1)),
     .batching = kBinaryRule<&strata::maximum>,
     .shape = &shape::pointwise,
     .flops = kOnePerElement},
    {.schema = "minimum(Tensor self, Tensor other) -> Tensor",
     .cpu = &arithmetic_cpu<BinaryOp::Minimum>,
     .cuda = &arithmetic_cpu<BinaryOp::Minimum>,
     .derivative = by_partials<SelectPartials<false>>(args(0, 1)),
     .batching = kBinaryRule<&strata::minimum>,
     .shape = &shape::pointwise,
     .flops = kOnePerElement},
});

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return STRATA_OP("strata::add", "Tensor", BinaryAlphaSig).call(a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return STRATA_OP("strata::sub", "Tensor", BinaryAlphaSig).call(a, b, alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::mul", "Tensor", BinarySig).call(a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::div", "Tensor", BinarySig).call(a, b);
}
Tensor pow(const Tensor& base, const Tensor& exponent) {
  return STRATA_OP("strata::pow", "Tensor_Tensor", BinarySig).call(base, exponent);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::maximum", "", BinarySig).call(a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::minimum", "", BinarySig).call(a, b);
}
Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const {
  return strata::add(*this, other, alpha);
}
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const {
  return strata::sub(*this, other, alpha);
}
Tensor Tensor::mul(const Tensor& other) const { return strata::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return strata::div(*this, other); }
Tensor Tensor::pow(const Tensor& exponent) const { return strata::pow(*this, exponent); }
Tensor Tensor::maximum(const Tensor& other) const { return strata::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return strata::minimum(*this, other); }
Tensor Tensor::atan2(const Tensor& other) const {
  return STRATA_OP("strata::atan2", "", BinarySig).call(*this, other);
}
const Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) const {
  return STRATA_OP("strata::add_", "Tensor", InplaceAlphaSig).call(*this, other, alpha);
}
const Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) const {
  return STRATA_OP("strata::sub_", "Tensor", InplaceAlphaSig).call(*this, other, alpha);
}
const Tensor& Tensor::mul_(const Tensor& other) const {
  return STRATA_OP("strata::mul_", "Tensor", InplaceSig).call(*this, other);
}
const Tensor& Tensor::div_(const Tensor& other) const {
  return STRATA_OP("strata::div_", "Tensor", InplaceSig).call(*this, other);
}
const Tensor& Tensor::pow_(const Tensor& exponent) const {
  return STRATA_OP("strata::pow_", "Tensor", InplaceSig).call(*this, exponent);
}
const Tensor& Tensor::atan2_(const Tensor& other) const {
  return STRATA_OP("strata::atan2_", "", InplaceSig).call(*this, other);
}

// ---- operators: a C++ number is a wrapped number ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, wrapped_scalar_tensor(b)); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, wrapped_scalar_tensor(b)); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, wrapped_scalar_tensor(b)); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, wrapped_scalar_tensor(b)); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(wrapped_scalar_tensor(a), b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrapped_scalar_tensor(a), b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(wrapped_scalar_tensor(a), b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrapped_scalar_tensor(a), b); }

}  // namespace strata
