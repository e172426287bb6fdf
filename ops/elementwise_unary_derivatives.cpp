// The derivatives of the unary family (Note [Derivative formulas]): the
// out-of-place ops of ops/elementwise_unary.cpp and their in-place variants of
// ops/elementwise_unary_inplace.cpp share them through
// ops/elementwise_unary_internal.h.
#include "ops/elementwise_backward.h"
#include "ops/elementwise_unary_internal.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "transforms/grad/derivative.h"

namespace strata {
namespace {

using cpu::UnaryOp;

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

// Negation is linear: the gradient and the tangent are negated (a rule of its own
// rather than linear_forward, which re-calls the op and so cannot serve neg_).
void neg_backward(BackwardContext& c) { c.set_grad(0, -c.grad()); }
void neg_forward(ForwardContext& c) { c.set_tangent(0, -c.tangent(0)); }

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

// silu(x) = x s with s = sigmoid(x): d/dx = s (1 + x (1 - s)).
struct SiluDerivative {
  template <class Context>
  static Tensor of(const Context& c) {
    const Tensor& x = c.input(0);
    const Tensor s = x.sigmoid();
    return s * (x * (1.0 - s) + 1.0);
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

}  // namespace

Facet<Kernel> elementwise::unary_derivative(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
      return derivative({.backward = &neg_backward, .forward = &neg_forward});
    case UnaryOp::Abs: return of_input<&abs_derivative>();
    case UnaryOp::Sign:
      return {autograd::non_differentiable(),
              "piecewise constant: zero wherever it has a derivative"};
    case UnaryOp::Square: return of_input<&square_derivative>();
    case UnaryOp::Relu:
      return derivative({.backward = &relu_backward_formula,
                         .forward = &relu_forward_formula,
                         .saved_outputs = kOutput});
    case UnaryOp::Exp: return of_output<&exp_derivative>();
    case UnaryOp::Expm1: return of_output<&expm1_derivative>();
    case UnaryOp::Log: return of_input<&log_derivative>();
    case UnaryOp::Log1p: return of_input<&log1p_derivative>();
    case UnaryOp::Sqrt: return of_output<&sqrt_derivative>();
    case UnaryOp::Rsqrt: return of_output<&rsqrt_derivative>();
    case UnaryOp::Reciprocal: return of_output<&reciprocal_derivative>();
    case UnaryOp::Sin:
      return derivative({.backward = &sin_backward_formula,
                         .forward = &forward_by<OfInput<&sin_derivative>>,
                         .saved_inputs = kInput});
    case UnaryOp::Cos:
      return derivative({.backward = &cos_backward_formula,
                         .forward = &forward_by<OfInput<&cos_derivative>>,
                         .saved_inputs = kInput});
    case UnaryOp::Tanh: return of_output<&tanh_derivative>();
    case UnaryOp::Sigmoid: return of_output<&sigmoid_derivative>();
    case UnaryOp::Gelu:
    case UnaryOp::GeluTanh: return scaled_by<GeluDerivative>(kInput, kOutput);
    case UnaryOp::Silu: return scaled_by<SiluDerivative>(kInput);
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
      return {autograd::non_differentiable(),
              "piecewise constant: zero wherever it has a derivative"};
    case UnaryOp::LogicalNot:
      return {autograd::non_differentiable(), "not differentiable: Bool output"};
  }
  STRATA_CHECK(false, "strata::unary", "no derivative for unary op ", static_cast<int>(op));
  return {};
}

KernelFunction elementwise::softplus_derivative() { return scaled_by<SoftplusDerivative>(kInput); }
KernelFunction elementwise::pow_scalar_derivative() {
  return scaled_by<PowScalarDerivative>(kInput);
}
KernelFunction elementwise::clamp_derivative() { return scaled_by<ClampDerivative>(kInput); }

}  // namespace strata
