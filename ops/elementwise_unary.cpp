// Unary elementwise operators: numeric (neg, abs, ... in the input's dtype),
// floating math (exp, log, ... Int64 and Bool inputs compute in Float32),
// rounding (floor, ceil, round), activations (relu, gelu, silu, softplus), pow with a Scalar
// exponent, clamp and logical_not, with the in-place clamp_. The in-place variants of the UnaryOp
// ops are in ops/elementwise_unary_inplace.cpp.
#include <string_view>

#include "dispatcher/boxing.h"
#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
#include "ops/elementwise_backward.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_unary_internal.h"
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

using cpu::UnaryOp;
using elementwise::InDtype;

using UnarySig = Tensor(const Tensor&);
using GeluSig = Tensor(const Tensor&, std::string_view);
using SoftplusSig = Tensor(const Tensor&, const Scalar&, const Scalar&);
using PowScalarSig = Tensor(const Tensor&, const Scalar&);
using ClampSig = Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&);
using ClampInplaceSig = const Tensor&(const Tensor&, const std::optional<Scalar>&,
                                      const std::optional<Scalar>&);

constexpr const char* op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "strata::neg";
    case UnaryOp::Abs: return "strata::abs";
    case UnaryOp::Sign: return "strata::sign";
    case UnaryOp::Square: return "strata::square";
    case UnaryOp::Relu: return "strata::relu";
    case UnaryOp::Floor: return "strata::floor";
    case UnaryOp::Ceil: return "strata::ceil";
    case UnaryOp::Round: return "strata::round";
    case UnaryOp::Exp: return "strata::exp";
    case UnaryOp::Expm1: return "strata::expm1";
    case UnaryOp::Log: return "strata::log";
    case UnaryOp::Log1p: return "strata::log1p";
    case UnaryOp::Sqrt: return "strata::sqrt";
    case UnaryOp::Rsqrt: return "strata::rsqrt";
    case UnaryOp::Reciprocal: return "strata::reciprocal";
    case UnaryOp::Sin: return "strata::sin";
    case UnaryOp::Cos: return "strata::cos";
    case UnaryOp::Tanh: return "strata::tanh";
    case UnaryOp::Sigmoid: return "strata::sigmoid";
    case UnaryOp::Gelu:
    case UnaryOp::GeluTanh: return "strata::gelu";
    case UnaryOp::Silu: return "strata::silu";
    case UnaryOp::LogicalNot: return "strata::logical_not";
  }
  return "?";
}

// A new contiguous output of self's shape in `dtype`.
Tensor new_output(const Tensor& self, ScalarType dtype, const char* op) {
  return make_empty_tensor(self.sizes(), dtype, self.device(), op);
}

// Ops with integer meaning keep the input's dtype (Bool is rejected).
template <UnaryOp kOp>
ScalarType numeric_dtype(const Tensor& self) {
  elementwise::check_not_bool(self.dtype(), op_name(kOp));
  return self.dtype();
}

template <UnaryOp kOp>
Tensor numeric_cpu(const Tensor& self) {
  Tensor out = new_output(self, numeric_dtype<kOp>(self), op_name(kOp));
  on_device::unary_kernel(kOp, out, self);
  return out;
}

Tensor floating(UnaryOp op, const Tensor& self) {
  const ScalarType dtype = elementwise::floating_dtype(self.dtype());
  Tensor out = new_output(self, dtype, op_name(op));
  on_device::unary_kernel(op, out, InDtype(self, dtype));
  return out;
}

template <UnaryOp kOp>
Tensor floating_cpu(const Tensor& self) {
  return floating(kOp, self);
}

// The kernel op of gelu's `approximate`.
UnaryOp gelu_kind(std::string_view approximate) {
  STRATA_CHECK(approximate == "none" || approximate == "tanh", "strata::gelu",
               "approximate must be 'none' or 'tanh', got '", approximate, "'");
  return approximate == "none" ? UnaryOp::Gelu : UnaryOp::GeluTanh;
}

Tensor gelu_cpu(const Tensor& self, std::string_view approximate) {
  return floating(gelu_kind(approximate), self);
}

Tensor softplus_cpu(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  const ScalarType dtype = elementwise::floating_dtype(self.dtype());
  Tensor out = new_output(self, dtype, "strata::softplus");
  on_device::softplus_kernel(out, InDtype(self, dtype), beta, threshold);
  return out;
}

Tensor logical_not_cpu(const Tensor& self) {
  Tensor out = new_output(self, kBool, "strata::logical_not");
  on_device::unary_kernel(UnaryOp::LogicalNot, out, self);
  return out;
}

// The exponent promotes like a wrapped number.
ScalarType pow_scalar_dtype(const Tensor& self, const Scalar& exponent) {
  const ScalarType dtype = result_type(self, wrapped_scalar_tensor(exponent));
  elementwise::check_not_bool(dtype, "strata::pow");
  STRATA_CHECK(is_floating_point(dtype) || exponent.to_int() >= 0, "strata::pow",
               "integers to negative integer powers are not allowed (", dtype, " base, exponent ",
               exponent, ")");
  return dtype;
}

Tensor pow_scalar_cpu(const Tensor& self, const Scalar& exponent) {
  const ScalarType dtype = pow_scalar_dtype(self, exponent);
  Tensor out = new_output(self, dtype, "strata::pow");
  on_device::pow_scalar_kernel(out, InDtype(self, dtype), exponent);
  return out;
}

// The dtype clamp computes in: bounds promote like wrapped numbers.
ScalarType clamp_dtype(const Tensor& self, const std::optional<Scalar>& min,
                       const std::optional<Scalar>& max, const char* op) {
  STRATA_CHECK(min || max, op, "at least one of min and max must be given");
  const Tensor operands[] = {self, min ? wrapped_scalar_tensor(*min) : Tensor(),
                             max ? wrapped_scalar_tensor(*max) : Tensor()};
  const ScalarType dtype = result_type(ArrayRef<Tensor>(operands, 3));
  elementwise::check_not_bool(dtype, op);
  return dtype;
}

Tensor clamp_cpu(const Tensor& self, const std::optional<Scalar>& min,
                 const std::optional<Scalar>& max) {
  const ScalarType dtype = clamp_dtype(self, min, max, "strata::clamp");
  Tensor out = new_output(self, dtype, "strata::clamp");
  on_device::clamp_kernel(out, InDtype(self, dtype), min, max);
  return out;
}

const Tensor& clamp__cpu(const Tensor& self, const std::optional<Scalar>& min,
                         const std::optional<Scalar>& max) {
  const ScalarType dtype = clamp_dtype(self, min, max, "strata::clamp_");
  elementwise::check_in_place(self, dtype, self.sizes(), "strata::clamp_");
  on_device::clamp_kernel(self, self, min, max);
  self.impl()->bump_version();
  return self;
}

// ---- batching rules (Note [Batching rules]): every op here is pointwise. The
// out-of-place ops take the unboxed rule, which calls the op on the batch without
// boxing; the in-place ones write into their batched self through the boxed one.

Tensor gelu_op(const Tensor& self, std::string_view approximate) {
  return STRATA_OP("strata::gelu", "", GeluSig).call(self, approximate);
}

Tensor clamp_op(const Tensor& self, const std::optional<Scalar>& min,
                const std::optional<Scalar>& max) {
  return STRATA_OP("strata::clamp", "", ClampSig).call(self, min, max);
}

template <auto kOp>
constexpr auto kRule = &batching::UnaryPointwiseRule<kOp>::call;
template <auto kMethod>
constexpr auto kMethodRule = kRule<&elementwise::AsFunction<kMethod>::call>;

// ---- the rows (Note [One op, one place]) ----

// One FLOP per output element for every op here: arithmetic, a comparison or a
// select counts one, and so does a transcendental function (exp, log, sin, tanh,
// erf, ...) or an activation built on one (sigmoid, gelu, softplus): one
// evaluation, whatever it costs in instructions on a given math library.
constexpr FlopFn kOnePerElement = &flops::per_output_element<1>;

template <UnaryOp kOp>
MetaList numeric_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  return shape::single(self.sizes(), numeric_dtype<kOp>(self));
}

MetaList gelu_shape(OpArgs args) {
  gelu_kind(args[1].to_string_ref());
  return shape::pointwise_floating(args);
}

MetaList pow_scalar_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  return shape::single(self.sizes(), pow_scalar_dtype(self, args[1].to_scalar()));
}

MetaList clamp_shape(OpArgs args) {
  using Bound = boxing::FromIValue<std::optional<Scalar>>;
  const Tensor& self = shape::tensor_arg(args, 0);
  return shape::single(
      self.sizes(), clamp_dtype(self, Bound::get(args[1]), Bound::get(args[2]), "strata::clamp"));
}

// An out-of-place unary op: one FLOP per element, batched by the unboxed rule.
OpDef pointwise(const char* schema, Kernel cpu, Facet<Kernel> derivative, Kernel batching,
                ShapeFn shape) {
  return {.schema = schema,
          .cpu = std::move(cpu),
          .derivative = std::move(derivative),
          .batching = std::move(batching),
          .shape = shape,
          .flops = kOnePerElement};
}
template <UnaryOp kOp>
OpDef numeric(const char* schema, Kernel batching) {
  return on_every_backend(pointwise(schema, &numeric_cpu<kOp>, elementwise::unary_derivative(kOp),
                                    std::move(batching), &numeric_shape<kOp>));
}
template <UnaryOp kOp>
OpDef floating_math(const char* schema, Kernel batching) {
  return on_every_backend(pointwise(schema, &floating_cpu<kOp>,
                                    elementwise::unary_derivative(kOp), std::move(batching),
                                    &shape::pointwise_floating));
}

const OpFamily kUnaryOps("elementwise_unary", {
    numeric<UnaryOp::Neg>("neg(Tensor self) -> Tensor", kMethodRule<&Tensor::neg>),
    numeric<UnaryOp::Abs>("abs(Tensor self) -> Tensor", kMethodRule<&Tensor::abs>),
    numeric<UnaryOp::Sign>("sign(Tensor self) -> Tensor", kMethodRule<&Tensor::sign>),
    numeric<UnaryOp::Square>("square(Tensor self) -> Tensor", kMethodRule<&Tensor::square>),
    numeric<UnaryOp::Relu>("relu(Tensor self) -> Tensor", kMethodRule<&Tensor::relu>),
    numeric<UnaryOp::Floor>("floor(Tensor self) -> Tensor", kMethodRule<&Tensor::floor>),
    numeric<UnaryOp::Ceil>("ceil(Tensor self) -> Tensor", kMethodRule<&Tensor::ceil>),
    numeric<UnaryOp::Round>("round(Tensor self) -> Tensor", kMethodRule<&Tensor::round>),
    floating_math<UnaryOp::Exp>("exp(Tensor self) -> Tensor", kMethodRule<&Tensor::exp>),
    floating_math<UnaryOp::Expm1>("expm1(Tensor self) -> Tensor", kMethodRule<&Tensor::expm1>),
    floating_math<UnaryOp::Log>("log(Tensor self) -> Tensor", kMethodRule<&Tensor::log>),
    floating_math<UnaryOp::Log1p>("log1p(Tensor self) -> Tensor", kMethodRule<&Tensor::log1p>),
    floating_math<UnaryOp::Sqrt>("sqrt(Tensor self) -> Tensor", kMethodRule<&Tensor::sqrt>),
    floating_math<UnaryOp::Rsqrt>("rsqrt(Tensor self) -> Tensor", kMethodRule<&Tensor::rsqrt>),
    floating_math<UnaryOp::Reciprocal>("reciprocal(Tensor self) -> Tensor",
                                       kMethodRule<&Tensor::reciprocal>),
    floating_math<UnaryOp::Sin>("sin(Tensor self) -> Tensor", kMethodRule<&Tensor::sin>),
    floating_math<UnaryOp::Cos>("cos(Tensor self) -> Tensor", kMethodRule<&Tensor::cos>),
    floating_math<UnaryOp::Tanh>("tanh(Tensor self) -> Tensor", kMethodRule<&Tensor::tanh>),
    floating_math<UnaryOp::Sigmoid>("sigmoid(Tensor self) -> Tensor",
                                    kMethodRule<&Tensor::sigmoid>),
    floating_math<UnaryOp::Silu>("silu(Tensor self) -> Tensor", kMethodRule<&Tensor::silu>),
    on_every_backend(pointwise("gelu(Tensor self, *, str approximate='none') -> Tensor", &gelu_cpu,
              elementwise::unary_derivative(UnaryOp::Gelu), kRule<&gelu_op>, &gelu_shape)),
    on_every_backend(pointwise("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
              &softplus_cpu, elementwise::softplus_derivative(), kMethodRule<&Tensor::softplus>,
              &shape::pointwise_floating)),
    on_every_backend(pointwise("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", &pow_scalar_cpu,
              elementwise::pow_scalar_derivative(),
              kRule<static_cast<Tensor (*)(const Tensor&, const Scalar&)>(&strata::pow)>,
              &pow_scalar_shape)),
    on_every_backend(pointwise("logical_not(Tensor self) -> Tensor", &logical_not_cpu,
              elementwise::unary_derivative(UnaryOp::LogicalNot),
              kMethodRule<&Tensor::logical_not>, &shape::pointwise_bool)),
    on_every_backend(pointwise("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", &clamp_cpu,
              elementwise::clamp_derivative(), kRule<&clamp_op>, &clamp_shape)),
    // The in-place clamp_ writes into its batched self through the boxed rule.
    {.schema = "clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)",
     .cpu = &clamp__cpu,
     .cuda = &clamp__cpu,
     .derivative = elementwise::clamp_derivative(),
     .batching = batching::pointwise_batch_rule(),
     .shape = &shape::same_as_self,
     .flops = kOnePerElement},
});

}  // namespace

Tensor Tensor::neg() const { return STRATA_OP("strata::neg", "", UnarySig).call(*this); }
Tensor Tensor::abs() const { return STRATA_OP("strata::abs", "", UnarySig).call(*this); }
Tensor Tensor::sign() const { return STRATA_OP("strata::sign", "", UnarySig).call(*this); }
Tensor Tensor::square() const { return STRATA_OP("strata::square", "", UnarySig).call(*this); }
Tensor Tensor::relu() const { return STRATA_OP("strata::relu", "", UnarySig).call(*this); }
Tensor Tensor::exp() const { return STRATA_OP("strata::exp", "", UnarySig).call(*this); }
Tensor Tensor::expm1() const { return STRATA_OP("strata::expm1", "", UnarySig).call(*this); }
Tensor Tensor::log() const { return STRATA_OP("strata::log", "", UnarySig).call(*this); }
Tensor Tensor::log1p() const { return STRATA_OP("strata::log1p", "", UnarySig).call(*this); }
Tensor Tensor::sqrt() const { return STRATA_OP("strata::sqrt", "", UnarySig).call(*this); }
Tensor Tensor::rsqrt() const { return STRATA_OP("strata::rsqrt", "", UnarySig).call(*this); }
Tensor Tensor::reciprocal() const {
  return STRATA_OP("strata::reciprocal", "", UnarySig).call(*this);
}
Tensor Tensor::sin() const { return STRATA_OP("strata::sin", "", UnarySig).call(*this); }
Tensor Tensor::cos() const { return STRATA_OP("strata::cos", "", UnarySig).call(*this); }
Tensor Tensor::tanh() const { return STRATA_OP("strata::tanh", "", UnarySig).call(*this); }
Tensor Tensor::sigmoid() const { return STRATA_OP("strata::sigmoid", "", UnarySig).call(*this); }
Tensor Tensor::gelu() const { return gelu_op(*this, "none"); }
Tensor Tensor::silu() const { return STRATA_OP("strata::silu", "", UnarySig).call(*this); }
Tensor Tensor::floor() const { return STRATA_OP("strata::floor", "", UnarySig).call(*this); }
Tensor Tensor::ceil() const { return STRATA_OP("strata::ceil", "", UnarySig).call(*this); }
Tensor Tensor::round() const { return STRATA_OP("strata::round", "", UnarySig).call(*this); }
Tensor Tensor::softplus(const Scalar& beta, const Scalar& threshold) const {
  return STRATA_OP("strata::softplus", "", SoftplusSig).call(*this, beta, threshold);
}
Tensor Tensor::pow(const Scalar& exponent) const { return strata::pow(*this, exponent); }
Tensor Tensor::logical_not() const {
  return STRATA_OP("strata::logical_not", "", UnarySig).call(*this);
}
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return strata::clamp(*this, min, max);
}
const Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return STRATA_OP("strata::clamp_", "", ClampInplaceSig).call(*this, min, max);
}

Tensor pow(const Tensor& base, const Scalar& exponent) {
  return STRATA_OP("strata::pow", "Tensor_Scalar", PowScalarSig).call(base, exponent);
}
Tensor clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max) {
  return clamp_op(t, min, max);
}

Tensor nn::gelu(const Tensor& input, std::string_view approximate) {
  return gelu_op(input, approximate);
}
Tensor nn::silu(const Tensor& input) { return input.silu(); }

Tensor operator-(const Tensor& t) { return t.neg(); }
Tensor operator!(const Tensor& t) { return t.logical_not(); }

}  // namespace strata
