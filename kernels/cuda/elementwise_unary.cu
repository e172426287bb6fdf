// Unary elementwise kernels on CUDA. The math of each functor matches its CPU
// twin in kernels/cpu/elementwise_unary.cpp (the CUDA op-table test compares them).
#include <limits>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/int_pow.h"
#include "tensor/scalar.h"

namespace strata::gpu {
namespace {

using cpu::UnaryOp;

template <UnaryOp kOp, class T>
__device__ __forceinline__ T apply_unary(T x) {
  if constexpr (kOp == UnaryOp::Neg)
    return -x;
  else if constexpr (kOp == UnaryOp::Abs) {
    if constexpr (std::is_floating_point_v<T>)
      return fabs(x);
    else
      return x < T(0) ? -x : x;
  } else if constexpr (kOp == UnaryOp::Sign)
    return static_cast<T>((T(0) < x) - (x < T(0)));
  else if constexpr (kOp == UnaryOp::Square)
    return x * x;
  else if constexpr (kOp == UnaryOp::Floor) {
    if constexpr (std::is_floating_point_v<T>) return floor(x);
    else return x;
  } else if constexpr (kOp == UnaryOp::Ceil) {
    if constexpr (std::is_floating_point_v<T>) return ceil(x);
    else return x;
  } else if constexpr (kOp == UnaryOp::Round) {  // half to even, as nearbyint
    if constexpr (std::is_floating_point_v<T>) return rint(x);
    else return x;
  } else if constexpr (kOp == UnaryOp::Silu) {
    return x / (T(1) + exp(-x));
  }
  else if constexpr (kOp == UnaryOp::Relu)
    return x < T(0) ? T(0) : x;
  else if constexpr (kOp == UnaryOp::Exp)
    return exp(x);
  else if constexpr (kOp == UnaryOp::Expm1)
    return expm1(x);
  else if constexpr (kOp == UnaryOp::Log)
    return log(x);
  else if constexpr (kOp == UnaryOp::Log1p)
    return log1p(x);
  else if constexpr (kOp == UnaryOp::Sqrt)
    return sqrt(x);
  else if constexpr (kOp == UnaryOp::Rsqrt)
    return T(1) / sqrt(x);
  else if constexpr (kOp == UnaryOp::Reciprocal)
    return T(1) / x;
  else if constexpr (kOp == UnaryOp::Sin)
    return sin(x);
  else if constexpr (kOp == UnaryOp::Cos)
    return cos(x);
  else if constexpr (kOp == UnaryOp::Tanh)
    return tanh(x);
  else if constexpr (kOp == UnaryOp::Sigmoid)
    return T(1) / (T(1) + exp(-x));
  else if constexpr (kOp == UnaryOp::Gelu) {
    return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
  } else {
    static_assert(kOp == UnaryOp::GeluTanh);
    constexpr double kScale = 0.7978845608028654;  // sqrt(2 / pi)
    constexpr double kCubic = 0.044715;
    return T(0.5) * x * (T(1) + tanh(T(kScale) * (x + T(kCubic) * x * x * x)));
  }
}

template <UnaryOp kOp, class T>
struct UnaryF {
  __device__ T operator()(T x) const { return apply_unary<kOp>(x); }
};

template <class T>
struct LogicalNotF {
  __device__ bool operator()(T x) const { return x == T(0); }
};

template <UnaryOp kOp>
void numeric(const Tensor& out, const Tensor& in, const char* name) {
  dispatch_numeric(out.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T>(name, out, {&in}, UnaryF<kOp, T>{});
  });
}

template <UnaryOp kOp>
void floating(const Tensor& out, const Tensor& in, const char* name) {
  dispatch_floating(out.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T>(name, out, {&in}, UnaryF<kOp, T>{});
  });
}

template <class T>
struct SoftplusF {
  T beta;
  T threshold;
  __device__ T operator()(T x) const {
    return x * beta > threshold ? x : log1p(exp(x * beta)) / beta;
  }
};

template <class T>
struct PowScalarF {
  T exponent;
  __device__ T operator()(T x) const { return pow(x, exponent); }
};
struct PowIntF {
  int64_t exponent;
  __device__ int64_t operator()(int64_t x) const { return int_pow(x, exponent); }
};

// NaN stays NaN: neither comparison takes it.
template <class T>
struct ClampF {
  T low;
  T high;
  __device__ T operator()(T x) const {
    const T m = x < low ? low : x;
    return high < m ? high : m;
  }
};

}  // namespace

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in) {
  if (op != UnaryOp::LogicalNot) {
    STRATA_CHECK(in.dtype() == out.dtype(), "strata::unary",
                 "kernel expects an input of the output's dtype ", out.dtype(), ", got ",
                 in.dtype());
  }
  switch (op) {
    case UnaryOp::Neg: return numeric<UnaryOp::Neg>(out, in, "strata::neg");
    case UnaryOp::Abs: return numeric<UnaryOp::Abs>(out, in, "strata::abs");
    case UnaryOp::Sign: return numeric<UnaryOp::Sign>(out, in, "strata::sign");
    case UnaryOp::Square: return numeric<UnaryOp::Square>(out, in, "strata::square");
    case UnaryOp::Relu: return numeric<UnaryOp::Relu>(out, in, "strata::relu");
    case UnaryOp::Floor: return numeric<UnaryOp::Floor>(out, in, "strata::floor");
    case UnaryOp::Ceil: return numeric<UnaryOp::Ceil>(out, in, "strata::ceil");
    case UnaryOp::Round: return numeric<UnaryOp::Round>(out, in, "strata::round");
    case UnaryOp::Silu: return floating<UnaryOp::Silu>(out, in, "strata::silu");
    case UnaryOp::Exp: return floating<UnaryOp::Exp>(out, in, "strata::exp");
    case UnaryOp::Expm1: return floating<UnaryOp::Expm1>(out, in, "strata::expm1");
    case UnaryOp::Log: return floating<UnaryOp::Log>(out, in, "strata::log");
    case UnaryOp::Log1p: return floating<UnaryOp::Log1p>(out, in, "strata::log1p");
    case UnaryOp::Sqrt: return floating<UnaryOp::Sqrt>(out, in, "strata::sqrt");
    case UnaryOp::Rsqrt: return floating<UnaryOp::Rsqrt>(out, in, "strata::rsqrt");
    case UnaryOp::Reciprocal: return floating<UnaryOp::Reciprocal>(out, in, "strata::reciprocal");
    case UnaryOp::Sin: return floating<UnaryOp::Sin>(out, in, "strata::sin");
    case UnaryOp::Cos: return floating<UnaryOp::Cos>(out, in, "strata::cos");
    case UnaryOp::Tanh: return floating<UnaryOp::Tanh>(out, in, "strata::tanh");
    case UnaryOp::Sigmoid: return floating<UnaryOp::Sigmoid>(out, in, "strata::sigmoid");
    case UnaryOp::Gelu: return floating<UnaryOp::Gelu>(out, in, "strata::gelu");
    case UnaryOp::GeluTanh: return floating<UnaryOp::GeluTanh>(out, in, "strata::gelu");
    case UnaryOp::LogicalNot:
      return dispatch_all(in.dtype(), "strata::logical_not", [&](auto tag) {
        using T = decltype(tag);
        launch_elementwise<bool, T>("strata::logical_not", out, {&in}, LogicalNotF<T>{});
      });
  }
  STRATA_FAIL("strata::unary", "internal: unary op ", static_cast<int>(op), " has no CUDA kernel");
}

void softplus_kernel(const Tensor& out, const Tensor& in, const Scalar& beta,
                     const Scalar& threshold) {
  dispatch_floating(out.dtype(), "strata::softplus", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T>("strata::softplus", out, {&in},
                             SoftplusF<T>{beta.to<T>(), threshold.to<T>()});
  });
}

// The exponents with exact, cheaper forms take them, as on the CPU.
void pow_scalar_kernel(const Tensor& out, const Tensor& base, const Scalar& exponent) {
  dispatch_numeric(out.dtype(), "strata::pow", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const double e = exponent.to_double();
      if (e == 2)
        return launch_elementwise<T, T>("strata::pow", out, {&base}, UnaryF<UnaryOp::Square, T>{});
      if (e == 0.5)
        return launch_elementwise<T, T>("strata::pow", out, {&base}, UnaryF<UnaryOp::Sqrt, T>{});
      if (e == -1) {
        return launch_elementwise<T, T>("strata::pow", out, {&base},
                                        UnaryF<UnaryOp::Reciprocal, T>{});
      }
      if (e == -0.5)
        return launch_elementwise<T, T>("strata::pow", out, {&base}, UnaryF<UnaryOp::Rsqrt, T>{});
      launch_elementwise<T, T>("strata::pow", out, {&base}, PowScalarF<T>{static_cast<T>(e)});
    } else {
      launch_elementwise<T, T>("strata::pow", out, {&base}, PowIntF{exponent.to_int()});
    }
  });
}

void clamp_kernel(const Tensor& out, const Tensor& in, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max) {
  dispatch_numeric(out.dtype(), "strata::clamp", [&](auto tag) {
    using T = decltype(tag);
    using limits = std::numeric_limits<T>;
    const T lowest = limits::has_infinity ? -limits::infinity() : limits::lowest();
    const T highest = limits::has_infinity ? limits::infinity() : limits::max();
    launch_elementwise<T, T>("strata::clamp", out, {&in},
                             ClampF<T>{min ? min->to<T>() : lowest, max ? max->to<T>() : highest});
  });
}

}  // namespace strata::gpu
