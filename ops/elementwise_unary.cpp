// Unary elementwise operators: numeric (neg, abs, ... in the input's dtype),
// floating math (exp, log, ... Int64 and Bool inputs compute in Float32),
// activations (relu, gelu, softplus), pow with a Scalar exponent, clamp and
// logical_not, with the in-place relu_ and clamp_.
#include <string_view>

#include "dispatcher/library.h"
#include "kernels/cpu/elementwise.h"
#include "ops/elementwise_util.h"
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
Tensor numeric_cpu(const Tensor& self) {
  elementwise::check_not_bool(self.dtype(), op_name(kOp));
  Tensor out = new_output(self, self.dtype(), op_name(kOp));
  cpu::unary_kernel(kOp, out, self);
  return out;
}

Tensor floating(UnaryOp op, const Tensor& self) {
  const ScalarType dtype = elementwise::floating_dtype(self.dtype());
  Tensor out = new_output(self, dtype, op_name(op));
  cpu::unary_kernel(op, out, InDtype(self, dtype));
  return out;
}

template <UnaryOp kOp>
Tensor floating_cpu(const Tensor& self) {
  return floating(kOp, self);
}

Tensor gelu_cpu(const Tensor& self, std::string_view approximate) {
  STRATA_CHECK(approximate == "none" || approximate == "tanh", "strata::gelu",
               "approximate must be 'none' or 'tanh', got '", approximate, "'");
  return floating(approximate == "none" ? UnaryOp::Gelu : UnaryOp::GeluTanh, self);
}

Tensor softplus_cpu(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  const ScalarType dtype = elementwise::floating_dtype(self.dtype());
  Tensor out = new_output(self, dtype, "strata::softplus");
  cpu::softplus_kernel(out, InDtype(self, dtype), beta, threshold);
  return out;
}

Tensor logical_not_cpu(const Tensor& self) {
  Tensor out = new_output(self, kBool, "strata::logical_not");
  cpu::unary_kernel(UnaryOp::LogicalNot, out, self);
  return out;
}

Tensor pow_scalar_cpu(const Tensor& self, const Scalar& exponent) {
  const ScalarType dtype = result_type(self, wrapped_scalar_tensor(exponent));
  elementwise::check_not_bool(dtype, "strata::pow");
  STRATA_CHECK(is_floating_point(dtype) || exponent.to_int() >= 0, "strata::pow",
               "integers to negative integer powers are not allowed (", dtype, " base, exponent ",
               exponent, ")");
  Tensor out = new_output(self, dtype, "strata::pow");
  cpu::pow_scalar_kernel(out, InDtype(self, dtype), exponent);
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
  cpu::clamp_kernel(out, InDtype(self, dtype), min, max);
  return out;
}

const Tensor& clamp__cpu(const Tensor& self, const std::optional<Scalar>& min,
                         const std::optional<Scalar>& max) {
  const ScalarType dtype = clamp_dtype(self, min, max, "strata::clamp_");
  elementwise::check_in_place(self, dtype, self.sizes(), "strata::clamp_");
  cpu::clamp_kernel(self, self, min, max);
  self.impl()->bump_version();
  return self;
}

const Tensor& relu__cpu(const Tensor& self) {
  elementwise::check_not_bool(self.dtype(), "strata::relu_");
  cpu::unary_kernel(UnaryOp::Relu, self, self);
  self.impl()->bump_version();
  return self;
}

STRATA_LIBRARY(strata, m) {
  m.def("neg(Tensor self) -> Tensor");
  m.def("abs(Tensor self) -> Tensor");
  m.def("sign(Tensor self) -> Tensor");
  m.def("square(Tensor self) -> Tensor");
  m.def("relu(Tensor self) -> Tensor");
  m.def("relu_(Tensor(a!) self) -> Tensor(a!)");
  m.def("exp(Tensor self) -> Tensor");
  m.def("expm1(Tensor self) -> Tensor");
  m.def("log(Tensor self) -> Tensor");
  m.def("log1p(Tensor self) -> Tensor");
  m.def("sqrt(Tensor self) -> Tensor");
  m.def("rsqrt(Tensor self) -> Tensor");
  m.def("reciprocal(Tensor self) -> Tensor");
  m.def("sin(Tensor self) -> Tensor");
  m.def("cos(Tensor self) -> Tensor");
  m.def("tanh(Tensor self) -> Tensor");
  m.def("sigmoid(Tensor self) -> Tensor");
  m.def("gelu(Tensor self, *, str approximate='none') -> Tensor");
  m.def("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor");
  m.def("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor");
  m.def("logical_not(Tensor self) -> Tensor");
  m.def("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor");
  m.def("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("neg", &numeric_cpu<UnaryOp::Neg>);
  m.impl("abs", &numeric_cpu<UnaryOp::Abs>);
  m.impl("sign", &numeric_cpu<UnaryOp::Sign>);
  m.impl("square", &numeric_cpu<UnaryOp::Square>);
  m.impl("relu", &numeric_cpu<UnaryOp::Relu>);
  m.impl("relu_", &relu__cpu);
  m.impl("exp", &floating_cpu<UnaryOp::Exp>);
  m.impl("expm1", &floating_cpu<UnaryOp::Expm1>);
  m.impl("log", &floating_cpu<UnaryOp::Log>);
  m.impl("log1p", &floating_cpu<UnaryOp::Log1p>);
  m.impl("sqrt", &floating_cpu<UnaryOp::Sqrt>);
  m.impl("rsqrt", &floating_cpu<UnaryOp::Rsqrt>);
  m.impl("reciprocal", &floating_cpu<UnaryOp::Reciprocal>);
  m.impl("sin", &floating_cpu<UnaryOp::Sin>);
  m.impl("cos", &floating_cpu<UnaryOp::Cos>);
  m.impl("tanh", &floating_cpu<UnaryOp::Tanh>);
  m.impl("sigmoid", &floating_cpu<UnaryOp::Sigmoid>);
  m.impl("gelu", &gelu_cpu);
  m.impl("softplus", &softplus_cpu);
  m.impl("pow.Tensor_Scalar", &pow_scalar_cpu);
  m.impl("logical_not", &logical_not_cpu);
  m.impl("clamp", &clamp_cpu);
  m.impl("clamp_", &clamp__cpu);
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

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("neg", derivative({.backward = &neg_backward, .forward = &autograd::linear_forward}));
  m.impl("abs", of_input<&abs_derivative>());
  m.impl("sign", autograd::non_differentiable());
  m.impl("logical_not", autograd::non_differentiable());
  m.impl("square", of_input<&square_derivative>());
  for (const char* name : {"relu", "relu_"}) {
    m.impl(name, derivative({.backward = &relu_backward_formula,
                             .forward = &relu_forward_formula,
                             .saved_outputs = kOutput}));
  }
  m.impl("exp", of_output<&exp_derivative>());
  m.impl("expm1", of_output<&expm1_derivative>());
  m.impl("log", of_input<&log_derivative>());
  m.impl("log1p", of_input<&log1p_derivative>());
  m.impl("sqrt", of_output<&sqrt_derivative>());
  m.impl("rsqrt", of_output<&rsqrt_derivative>());
  m.impl("reciprocal", of_output<&reciprocal_derivative>());
  m.impl("sin", derivative({.backward = &sin_backward_formula,
                            .forward = &forward_by<OfInput<&sin_derivative>>,
                            .saved_inputs = kInput}));
  m.impl("cos", derivative({.backward = &cos_backward_formula,
                            .forward = &forward_by<OfInput<&cos_derivative>>,
                            .saved_inputs = kInput}));
  m.impl("tanh", of_output<&tanh_derivative>());
  m.impl("sigmoid", of_output<&sigmoid_derivative>());
  m.impl("gelu", scaled_by<GeluDerivative>(kInput, kOutput));
  m.impl("softplus", scaled_by<SoftplusDerivative>(kInput));
  m.impl("pow.Tensor_Scalar", scaled_by<PowScalarDerivative>(kInput));
  m.impl("clamp", scaled_by<ClampDerivative>(kInput));
  m.impl("clamp_", scaled_by<ClampDerivative>(kInput));
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

STRATA_LIBRARY_IMPL(strata, Batched, m) {
  m.impl("neg", kMethodRule<&Tensor::neg>);
  m.impl("abs", kMethodRule<&Tensor::abs>);
  m.impl("sign", kMethodRule<&Tensor::sign>);
  m.impl("square", kMethodRule<&Tensor::square>);
  m.impl("relu", kMethodRule<&Tensor::relu>);
  m.impl("exp", kMethodRule<&Tensor::exp>);
  m.impl("expm1", kMethodRule<&Tensor::expm1>);
  m.impl("log", kMethodRule<&Tensor::log>);
  m.impl("log1p", kMethodRule<&Tensor::log1p>);
  m.impl("sqrt", kMethodRule<&Tensor::sqrt>);
  m.impl("rsqrt", kMethodRule<&Tensor::rsqrt>);
  m.impl("reciprocal", kMethodRule<&Tensor::reciprocal>);
  m.impl("sin", kMethodRule<&Tensor::sin>);
  m.impl("cos", kMethodRule<&Tensor::cos>);
  m.impl("tanh", kMethodRule<&Tensor::tanh>);
  m.impl("sigmoid", kMethodRule<&Tensor::sigmoid>);
  m.impl("logical_not", kMethodRule<&Tensor::logical_not>);
  m.impl("softplus", kMethodRule<&Tensor::softplus>);
  m.impl("gelu", kRule<&gelu_op>);
  m.impl("clamp", kRule<&clamp_op>);
  m.impl("pow.Tensor_Scalar",
         kRule<static_cast<Tensor (*)(const Tensor&, const Scalar&)>(&strata::pow)>);
  for (const char* name : {"relu_", "clamp_"}) m.impl(name, batching::pointwise_batch_rule());
}

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
