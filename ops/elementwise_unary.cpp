// Unary elementwise operators: numeric (neg, abs, ... in the input's dtype),
// floating math (exp, log, ... Int64 and Bool inputs compute in Float32),
// activations (relu, gelu, softplus), pow with a Scalar exponent, clamp and
// logical_not, with the in-place relu_ and clamp_.
#include <string_view>

#include "dispatcher/boxing.h"
#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
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

const Tensor& relu__cpu(const Tensor& self) {
  elementwise::check_not_bool(self.dtype(), "strata::relu_");
  check_no_internal_overlap(self, "strata::relu_");
  on_device::unary_kernel(UnaryOp::Relu, self, self);
  self.impl()->bump_version();
  return self;
}

// ---- derivatives (Note [Derivative formulas]) -----------------------------------

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

// A pointwise op's gradient and tangent are both scaled by its local derivative,
// Local::of(c), which reads the call's input, output and other arguments from
// either context, so the two modes share it.
template <class Local>
void backward_by(BackwardContext& c) {
  c.set_grad(0, c.grad() * Local::of(c));
}
template <class Local>
void forward_by(ForwardContext& c) {
  c.set_tangent(0, c.tangent(0) * Local::of(c));
}

template <class Local>
KernelFunction scaled_by(uint32_t saved_inputs, uint32_t saved_outputs = 0) {
  return derivative({.backward = &backward_by<Local>,
                     .forward = &forward_by<Local>,
                     .saved_inputs = saved_inputs,
                     .saved_outputs = saved_outputs});
}

// Most unary ops' derivative is a function of the input x alone, or of the output y.
template <Tensor (*kDerivative)(const Tensor& x)>
struct OfInput {
  template <class Context>
  static Tensor of(const Context& c) {
    return kDerivative(c.input(0));
  }
};
template <Tensor (*kDerivative)(const Tensor& y)>
struct OfOutput {
  template <class Context>
  static Tensor of(const Context& c) {
    return kDerivative(c.output());
  }
};

Tensor exp_derivative(const Tensor& y) { return y; }
Tensor expm1_derivative(const Tensor& y) { return y + 1.0; }
Tensor sqrt_derivative(const Tensor& y) { return 0.5 / y; }
Tensor rsqrt_derivative(const Tensor& y) { return y.pow(3.0) * -0.5; }
Tensor reciprocal_derivative(const Tensor& y) { return -(y * y); }
Tensor tanh_derivative(const Tensor& y) { return 1.0 - y * y; }
Tensor sigmoid_derivative(const Tensor& y) { return y * (1.0 - y); }
Tensor abs_derivative(const Tensor& x) { return x.sign(); }
Tensor square_derivative(const Tensor& x) { return x * 2.0; }
Tensor log_derivative(const Tensor& x) { return x.reciprocal(); }
Tensor log1p_derivative(const Tensor& x) { return (x + 1.0).reciprocal(); }
Tensor sin_derivative(const Tensor& x) { return x.cos(); }
Tensor cos_derivative(const Tensor& x) { return -x.sin(); }

constexpr uint32_t kInput = args(0);
constexpr uint32_t kOutput = args(0);

void neg_backward(BackwardContext& c) { c.set_grad(0, -c.grad()); }

// Through relu_backward, one pass (Note [relu's gradient as one op]).
void relu_backward_formula(BackwardContext& c) {
  c.set_grad(0, relu_backward(c.grad(), c.output()));
}
void relu_forward_formula(ForwardContext& c) {
  c.set_tangent(0, relu_backward(c.tangent(0), c.output()));
}

// Through the backward ops, whose own derivatives make forward mode over the
// gradient one pass (Note [Backward ops with their own derivatives]).
void sin_backward_formula(BackwardContext& c) { c.set_grad(0, sin_backward(c.grad(), c.input(0))); }
void cos_backward_formula(BackwardContext& c) { c.set_grad(0, cos_backward(c.grad(), c.input(0))); }

// gelu(x) = x * Phi(x), so d/dx = Phi(x) + x * phi(x). Phi is read off the
// output as gelu(x) / x rather than needing erf as an op. At 0 it is taken as
// 1/2 + x * phi(x), Phi's value and slope there, so that an outer grad is right
// at 0 too; dividing by 1 there keeps 0 / 0 out of its backward. The tanh
// approximation differentiates through tanh.
struct GeluDerivative {
  template <class Context>
  static Tensor of(const Context& c) {
    const Tensor& x = c.input(0);
    if (c.arg(1).to_string_ref() == "tanh") {
      constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
      constexpr double kKappa = 0.044715;
      Tensor inner = (x + x.pow(3.0) * kKappa) * kBeta;
      Tensor t = inner.tanh();
      Tensor d_inner = (x.square() * (3.0 * kKappa) + 1.0) * kBeta;
      return (t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * d_inner;
    }
    constexpr double kInvSqrt2Pi = 0.3989422804014327;
    Tensor pdf = (x.square() * -0.5).exp() * kInvSqrt2Pi;
    Tensor at_zero = x == 0.0;
    Tensor cdf = where(at_zero, x * pdf + 0.5, c.output() / where(at_zero, ones_like(x), x));
    return cdf + x * pdf;
  }
};

struct SoftplusDerivative {
  template <class Context>
  static Tensor of(const Context& c) {
    const Tensor& x = c.input(0);
    Tensor scaled = x * c.scalar_arg(1).template to<double>();
    return where(scaled > c.scalar_arg(2).template to<double>(), ones_like(x), scaled.sigmoid());
  }
};

// x^0 is constant: zeros, not 0 * x^-1, which is NaN at 0.
struct PowScalarDerivative {
  template <class Context>
  static Tensor of(const Context& c) {
    const double exponent = c.scalar_arg(1).template to<double>();
    if (exponent == 0.0) return zeros_like(c.input(0));
    return c.input(0).pow(exponent - 1.0) * exponent;
  }
};

// 1 where x is within the bounds (inclusive), 0 where clamp replaced it; the
// in-place clamp_'s formulas see x as it was before the write.
struct ClampDerivative {
  template <class Context>
  static Tensor of(const Context& c) {
    const Tensor& x = c.input(0);
    Tensor pass = ones_like(x, ScalarType::Bool);
    if (!c.arg(1).is_none()) pass = pass.logical_and(x >= c.scalar_arg(1));
    if (!c.arg(2).is_none()) pass = pass.logical_and(x <= c.scalar_arg(2));
    return pass;
  }
};

template <Tensor (*kDerivative)(const Tensor& x)>
KernelFunction of_input() {
  return scaled_by<OfInput<kDerivative>>(kInput);
}
template <Tensor (*kDerivative)(const Tensor& y)>
KernelFunction of_output() {
  return scaled_by<OfOutput<kDerivative>>(0, kOutput);
}

KernelFunction relu_derivative() {
  return derivative({.backward = &relu_backward_formula,
                     .forward = &relu_forward_formula,
                     .saved_outputs = kOutput});
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
  return shape::single(self.sizes(), clamp_dtype(self, Bound::get(args[1]), Bound::get(args[2]),
                                                 "strata::clamp"));
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
OpDef numeric(const char* schema, Facet<Kernel> derivative, Kernel batching) {
  return on_every_backend(pointwise(schema, &numeric_cpu<kOp>, std::move(derivative),
                                    std::move(batching), &numeric_shape<kOp>));
}
template <UnaryOp kOp>
OpDef floating_math(const char* schema, Facet<Kernel> derivative, Kernel batching) {
  return on_every_backend(pointwise(schema, &floating_cpu<kOp>, std::move(derivative),
                                    std::move(batching), &shape::pointwise_floating));
}
// An in-place one writes into its batched self through the boxed rule.
OpDef in_place(const char* schema, Kernel cpu, Facet<Kernel> derivative) {
  return {.schema = schema,
          .cpu = std::move(cpu),
          .derivative = std::move(derivative),
          .batching = batching::pointwise_batch_rule(),
          .shape = &shape::same_as_self,
          .flops = kOnePerElement};
}

const OpFamily kUnaryOps("elementwise_unary", {
    numeric<UnaryOp::Neg>(
        "neg(Tensor self) -> Tensor",
        derivative({.backward = &neg_backward, .forward = &autograd::linear_forward}),
        kMethodRule<&Tensor::neg>),
    numeric<UnaryOp::Abs>("abs(Tensor self) -> Tensor", of_input<&abs_derivative>(),
                          kMethodRule<&Tensor::abs>),
    numeric<UnaryOp::Sign>(
        "sign(Tensor self) -> Tensor",
        {autograd::non_differentiable(), "piecewise constant: zero wherever it has a derivative"},
        kMethodRule<&Tensor::sign>),
    numeric<UnaryOp::Square>("square(Tensor self) -> Tensor", of_input<&square_derivative>(),
                             kMethodRule<&Tensor::square>),
    numeric<UnaryOp::Relu>("relu(Tensor self) -> Tensor", relu_derivative(),
                           kMethodRule<&Tensor::relu>),
    on_every_backend(
        in_place("relu_(Tensor(a!) self) -> Tensor(a!)", &relu__cpu, relu_derivative())),
    floating_math<UnaryOp::Exp>("exp(Tensor self) -> Tensor", of_output<&exp_derivative>(),
                                kMethodRule<&Tensor::exp>),
    floating_math<UnaryOp::Expm1>("expm1(Tensor self) -> Tensor", of_output<&expm1_derivative>(),
                                  kMethodRule<&Tensor::expm1>),
    floating_math<UnaryOp::Log>("log(Tensor self) -> Tensor", of_input<&log_derivative>(),
                                kMethodRule<&Tensor::log>),
    floating_math<UnaryOp::Log1p>("log1p(Tensor self) -> Tensor", of_input<&log1p_derivative>(),
                                  kMethodRule<&Tensor::log1p>),
    floating_math<UnaryOp::Sqrt>("sqrt(Tensor self) -> Tensor", of_output<&sqrt_derivative>(),
                                 kMethodRule<&Tensor::sqrt>),
    floating_math<UnaryOp::Rsqrt>("rsqrt(Tensor self) -> Tensor", of_output<&rsqrt_derivative>(),
                                  kMethodRule<&Tensor::rsqrt>),
    floating_math<UnaryOp::Reciprocal>("reciprocal(Tensor self) -> Tensor",
                                       of_output<&reciprocal_derivative>(),
                                       kMethodRule<&Tensor::reciprocal>),
    floating_math<UnaryOp::Sin>("sin(Tensor self) -> Tensor",
                                derivative({.backward = &sin_backward_formula,
                                            .forward = &forward_by<OfInput<&sin_derivative>>,
                                            .saved_inputs = kInput}),
                                kMethodRule<&Tensor::sin>),
    floating_math<UnaryOp::Cos>("cos(Tensor self) -> Tensor",
                                derivative({.backward = &cos_backward_formula,
                                            .forward = &forward_by<OfInput<&cos_derivative>>,
                                            .saved_inputs = kInput}),
                                kMethodRule<&Tensor::cos>),
    floating_math<UnaryOp::Tanh>("tanh(Tensor self) -> Tensor", of_output<&tanh_derivative>(),
                                 kMethodRule<&Tensor::tanh>),
    floating_math<UnaryOp::Sigmoid>("sigmoid(Tensor self) -> Tensor",
                                    of_output<&sigmoid_derivative>(),
                                    kMethodRule<&Tensor::sigmoid>),
    on_every_backend(pointwise("gelu(Tensor self, *, str approximate='none') -> Tensor", &gelu_cpu,
              scaled_by<GeluDerivative>(kInput, kOutput), kRule<&gelu_op>, &gelu_shape)),
    on_every_backend(pointwise(
              "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
              &softplus_cpu, scaled_by<SoftplusDerivative>(kInput),
              kMethodRule<&Tensor::softplus>, &shape::pointwise_floating)),
    on_every_backend(pointwise("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
              &pow_scalar_cpu,
              scaled_by<PowScalarDerivative>(kInput),
              kRule<static_cast<Tensor (*)(const Tensor&, const Scalar&)>(&strata::pow)>,
              &pow_scalar_shape)),
    on_every_backend(pointwise("logical_not(Tensor self) -> Tensor", &logical_not_cpu,
              {autograd::non_differentiable(), "not differentiable: Bool output"},
              kMethodRule<&Tensor::logical_not>, &shape::pointwise_bool)),
    on_every_backend(pointwise("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
              &clamp_cpu, scaled_by<ClampDerivative>(kInput), kRule<&clamp_op>, &clamp_shape)),
    on_every_backend(in_place(
             "clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)",
             &clamp__cpu, scaled_by<ClampDerivative>(kInput))),
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
const Tensor& Tensor::relu_() const {
  return STRATA_OP("strata::relu_", "", const Tensor&(const Tensor&)).call(*this);
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

Tensor operator-(const Tensor& t) { return t.neg(); }
Tensor operator!(const Tensor& t) { return t.logical_not(); }

}  // namespace strata
