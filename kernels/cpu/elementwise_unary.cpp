// Unary elementwise kernels: per-element functors, with an Eigen array form for
// contiguous rows where Eigen has SIMD math (exp, log, tanh, sin, erf, ...).
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>

#include "kernels/cpu/elementwise_rows.h"
#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// ---- numeric: Int64, Float32, Float64 (plain loops; the compiler vectorizes) ----
struct Neg {
  template <class T>
  T operator()(T x) const {
    return -x;
  }
};
struct Abs {
  template <class T>
  T operator()(T x) const {
    return std::abs(x);
  }
};
struct Sign {
  template <class T>
  T operator()(T x) const {
    return static_cast<T>((T(0) < x) - (x < T(0)));
  }
};
struct Square {
  template <class T>
  T operator()(T x) const {
    return x * x;
  }
};
// Written so that NaN passes through, as max(x, 0) would not.
struct Relu {
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};

// Integers are already whole: they pass through.
struct Floor {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>)
      return x;
    else
      return std::floor(x);
  }
};
struct Ceil {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>)
      return x;
    else
      return std::ceil(x);
  }
};
// Halves go to the even neighbour (the default rounding mode), as in PyTorch.
struct Round {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>)
      return x;
    else
      return std::nearbyint(x);
  }
};

// ---- floating: Float32, Float64 ----
struct Exp {
  template <class T>
  T operator()(T x) const {
    return std::exp(x);
  }
  auto array(const auto& x) const { return x.exp(); }
};
struct Expm1 {
  template <class T>
  T operator()(T x) const {
    return std::expm1(x);
  }
  auto array(const auto& x) const { return x.expm1(); }
};
struct Log {
  template <class T>
  T operator()(T x) const {
    return std::log(x);
  }
  auto array(const auto& x) const { return x.log(); }
};
struct Log1p {
  template <class T>
  T operator()(T x) const {
    return std::log1p(x);
  }
  auto array(const auto& x) const { return x.log1p(); }
};
struct Sqrt {
  template <class T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
  auto array(const auto& x) const { return x.sqrt(); }
};
struct Rsqrt {
  template <class T>
  T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
  auto array(const auto& x) const { return x.rsqrt(); }
};
struct Reciprocal {
  template <class T>
  T operator()(T x) const {
    return T(1) / x;
  }
};
struct Sin {
  template <class T>
  T operator()(T x) const {
    return std::sin(x);
  }
  auto array(const auto& x) const { return x.sin(); }
};
struct Cos {
  template <class T>
  T operator()(T x) const {
    return std::cos(x);
  }
  auto array(const auto& x) const { return x.cos(); }
};
struct Tanh {
  template <class T>
  T operator()(T x) const {
    return std::tanh(x);
  }
  auto array(const auto& x) const { return x.tanh(); }
};
struct Sigmoid {
  template <class T>
  T operator()(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
  auto array(const auto& x) const { return x.logistic(); }
};
// x * Phi(x) with the exact normal CDF.
struct Gelu {
  template <class T>
  T operator()(T x) const {
    return T(0.5) * x * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
  }
  template <class A>
  auto array(const A& x) const {
    using T = typename A::Scalar;
    return T(0.5) * x * (T(1) + (x * T(std::numbers::sqrt2 / 2)).erf());
  }
};
// The tanh approximation of gelu.
struct GeluTanh {
  static constexpr double kScale = 0.7978845608028654;  // sqrt(2 / pi)
  static constexpr double kCubic = 0.044715;
  template <class T>
  T operator()(T x) const {
    return T(0.5) * x * (T(1) + std::tanh(T(kScale) * (x + T(kCubic) * x * x * x)));
  }
  template <class A>
  auto array(const A& x) const {
    using T = typename A::Scalar;
    return T(0.5) * x * (T(1) + (T(kScale) * (x + T(kCubic) * x.cube())).tanh());
  }
};

// x * sigmoid(x).
struct Silu {
  template <class T>
  T operator()(T x) const {
    return x / (T(1) + std::exp(-x));
  }
  auto array(const auto& x) const { return x * x.logistic(); }
};

template <class T>
struct Softplus {
  T beta;
  T threshold;
  T operator()(T x) const {
    return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
  }
};

template <class T>
struct PowFloat {
  T exponent;
  T operator()(T x) const { return std::pow(x, exponent); }
  auto array(const auto& x) const { return x.pow(exponent); }
};

template <class T>
struct PowInt {
  int64_t exponent;
  T operator()(T x) const { return int_pow(x, exponent); }
};

template <class T>
struct Clamp {
  T low;
  T high;
  T operator()(T x) const { return std::min(std::max(x, low), high); }
};

void check_same_dtype(const Tensor& out, const Tensor& in, const char* op) {
  STRATA_CHECK(in.dtype() == out.dtype(), op, "kernel expects an input of the output's dtype ",
               out.dtype(), ", got ", in.dtype());
}

template <class Op>
void numeric_unary(const Tensor& out, const Tensor& in, const char* op) {
  check_same_dtype(out, in, op);
  dispatch_numeric(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    run_unary<T, T>(out, in, Op{});
  });
}

template <class Op>
void floating_unary(const Tensor& out, const Tensor& in, const char* op) {
  check_same_dtype(out, in, op);
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    run_unary<T, T>(out, in, Op{});
  });
}

void logical_not(const Tensor& out, const Tensor& in) {
  STRATA_CHECK(out.dtype() == kBool, "strata::logical_not", "kernel expects a Bool output, got ",
               out.dtype());
  dispatch_all(in.dtype(), "strata::logical_not", [&](auto tag) {
    using T = decltype(tag);
    run_unary<bool, T>(out, in, [](T x) { return x == T(0); });
  });
}

}  // namespace

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in) {
  switch (op) {
    case UnaryOp::Neg: return numeric_unary<Neg>(out, in, "strata::neg");
    case UnaryOp::Abs: return numeric_unary<Abs>(out, in, "strata::abs");
    case UnaryOp::Sign: return numeric_unary<Sign>(out, in, "strata::sign");
    case UnaryOp::Square: return numeric_unary<Square>(out, in, "strata::square");
    case UnaryOp::Relu: return numeric_unary<Relu>(out, in, "strata::relu");
    case UnaryOp::Floor: return numeric_unary<Floor>(out, in, "strata::floor");
    case UnaryOp::Ceil: return numeric_unary<Ceil>(out, in, "strata::ceil");
    case UnaryOp::Round: return numeric_unary<Round>(out, in, "strata::round");
    case UnaryOp::Exp: return floating_unary<Exp>(out, in, "strata::exp");
    case UnaryOp::Expm1: return floating_unary<Expm1>(out, in, "strata::expm1");
    case UnaryOp::Log: return floating_unary<Log>(out, in, "strata::log");
    case UnaryOp::Log1p: return floating_unary<Log1p>(out, in, "strata::log1p");
    case UnaryOp::Sqrt: return floating_unary<Sqrt>(out, in, "strata::sqrt");
    case UnaryOp::Rsqrt: return floating_unary<Rsqrt>(out, in, "strata::rsqrt");
    case UnaryOp::Reciprocal: return floating_unary<Reciprocal>(out, in, "strata::reciprocal");
    case UnaryOp::Sin: return floating_unary<Sin>(out, in, "strata::sin");
    case UnaryOp::Cos: return floating_unary<Cos>(out, in, "strata::cos");
    case UnaryOp::Tanh: return floating_unary<Tanh>(out, in, "strata::tanh");
    case UnaryOp::Sigmoid: return floating_unary<Sigmoid>(out, in, "strata::sigmoid");
    case UnaryOp::Gelu: return floating_unary<Gelu>(out, in, "strata::gelu");
    case UnaryOp::GeluTanh: return floating_unary<GeluTanh>(out, in, "strata::gelu");
    case UnaryOp::Silu: return floating_unary<Silu>(out, in, "strata::silu");
    case UnaryOp::LogicalNot: return logical_not(out, in);
  }
}

void softplus_kernel(const Tensor& out, const Tensor& in, const Scalar& beta,
                     const Scalar& threshold) {
  check_same_dtype(out, in, "strata::softplus");
  dispatch_floating(out.dtype(), "strata::softplus", [&](auto tag) {
    using T = decltype(tag);
    run_unary<T, T>(out, in, Softplus<T>{beta.to<T>(), threshold.to<T>()});
  });
}

void pow_scalar_kernel(const Tensor& out, const Tensor& base, const Scalar& exponent) {
  check_same_dtype(out, base, "strata::pow");
  dispatch_numeric(out.dtype(), "strata::pow", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      // The common exponents get exact, cheaper forms than pow().
      const double e = exponent.to_double();
      if (e == 2) return run_unary<T, T>(out, base, Square{});
      if (e == 0.5) return run_unary<T, T>(out, base, Sqrt{});
      if (e == -1) return run_unary<T, T>(out, base, Reciprocal{});
      if (e == -0.5) return run_unary<T, T>(out, base, Rsqrt{});
      run_unary<T, T>(out, base, PowFloat<T>{static_cast<T>(e)});
    } else {
      run_unary<T, T>(out, base, PowInt<T>{exponent.to_int()});
    }
  });
}

void clamp_kernel(const Tensor& out, const Tensor& in, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max) {
  check_same_dtype(out, in, "strata::clamp");
  dispatch_numeric(out.dtype(), "strata::clamp", [&](auto tag) {
    using T = decltype(tag);
    using limits = std::numeric_limits<T>;
    // A missing bound is the extreme value, so it never changes an element.
    const T lowest = limits::has_infinity ? -limits::infinity() : limits::lowest();
    const T highest = limits::has_infinity ? limits::infinity() : limits::max();
    run_unary<T, T>(out, in, Clamp<T>{min ? min->to<T>() : lowest, max ? max->to<T>() : highest});
  });
}

}  // namespace strata::cpu
