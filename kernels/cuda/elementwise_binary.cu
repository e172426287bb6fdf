// Binary elementwise kernels on CUDA: arithmetic, comparisons, where, atan2.
// The math of each functor matches its CPU twin in kernels/cpu/elementwise_binary.cpp
// (the CUDA op-table test compares them on every sample).
#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/int_pow.h"
#include "tensor/scalar.h"

namespace strata::gpu {
namespace {

using cpu::BinaryOp;
using cpu::CompareOp;

template <class T>
struct AddF {
  T alpha;
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || (alpha && b);
    else
      return a + alpha * b;
  }
};
template <class T>
struct SubF {
  T alpha;
  __device__ T operator()(T a, T b) const { return a - alpha * b; }
};
template <class T>
struct MulF {
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else
      return a * b;
  }
};
template <class T>
struct DivF {
  __device__ T operator()(T a, T b) const { return a / b; }
};
template <class T>
struct PowF {
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return pow(a, b);
    else
      return int_pow(a, b);
  }
};
// A NaN on either side wins.
template <class T, bool kMax>
struct ExtremumF {
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b != b) return b;
    }
    if constexpr (kMax)
      return a < b ? b : a;
    else
      return b < a ? b : a;
  }
};
template <class T>
struct Atan2F {
  __device__ T operator()(T y, T x) const { return atan2(y, x); }
};

template <class T, CompareOp kOp>
struct CompareF {
  __device__ bool operator()(T a, T b) const {
    switch (kOp) {
      case CompareOp::Eq: return a == b;
      case CompareOp::Ne: return a != b;
      case CompareOp::Lt: return a < b;
      case CompareOp::Le: return a <= b;
      case CompareOp::Gt: return a > b;
      case CompareOp::Ge: return a >= b;
      case CompareOp::LogicalAnd: return a != T(0) && b != T(0);
      case CompareOp::LogicalOr: return a != T(0) || b != T(0);
    }
    return false;
  }
};
template <class T>
struct WhereF {
  __device__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

template <class T, template <class> class Op>
void run(const char* name, const Tensor& out, const Tensor& a, const Tensor& b, Op<T> op) {
  launch_elementwise<T, T, T>(name, out, {&a, &b}, op);
}

void check_dtypes(const char* name, const Tensor& out, const Tensor& a, const Tensor& b) {
  STRATA_CHECK(a.dtype() == out.dtype() && b.dtype() == out.dtype(), name,
               "kernel expects inputs of the output's dtype ", out.dtype(), ", got ", a.dtype(),
               " and ", b.dtype());
}

template <CompareOp kOp>
void compare(const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_all(a.dtype(), "strata::compare", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<bool, T, T>("strata::compare", out, {&a, &b}, CompareF<T, kOp>{});
  });
}

}  // namespace

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                   const Scalar& alpha) {
  switch (op) {
    case BinaryOp::Add:
      check_dtypes("strata::add", out, a, b);
      return dispatch_all(out.dtype(), "strata::add", [&](auto tag) {
        using T = decltype(tag);
        run<T, AddF>("strata::add", out, a, b, AddF<T>{alpha.to<T>()});
      });
    case BinaryOp::Sub:
      check_dtypes("strata::sub", out, a, b);
      return dispatch_numeric(out.dtype(), "strata::sub", [&](auto tag) {
        using T = decltype(tag);
        run<T, SubF>("strata::sub", out, a, b, SubF<T>{alpha.to<T>()});
      });
    case BinaryOp::Mul:
      check_dtypes("strata::mul", out, a, b);
      return dispatch_all(out.dtype(), "strata::mul", [&](auto tag) {
        using T = decltype(tag);
        run<T, MulF>("strata::mul", out, a, b, MulF<T>{});
      });
    case BinaryOp::Div:
      check_dtypes("strata::div", out, a, b);
      return dispatch_floating(out.dtype(), "strata::div", [&](auto tag) {
        using T = decltype(tag);
        run<T, DivF>("strata::div", out, a, b, DivF<T>{});
      });
    case BinaryOp::Pow:
      check_dtypes("strata::pow", out, a, b);
      return dispatch_numeric(out.dtype(), "strata::pow", [&](auto tag) {
        using T = decltype(tag);
        run<T, PowF>("strata::pow", out, a, b, PowF<T>{});
      });
    case BinaryOp::Maximum:
      check_dtypes("strata::maximum", out, a, b);
      return dispatch_all(out.dtype(), "strata::maximum", [&](auto tag) {
        using T = decltype(tag);
        launch_elementwise<T, T, T>("strata::maximum", out, {&a, &b}, ExtremumF<T, true>{});
      });
    case BinaryOp::Minimum:
      check_dtypes("strata::minimum", out, a, b);
      return dispatch_all(out.dtype(), "strata::minimum", [&](auto tag) {
        using T = decltype(tag);
        launch_elementwise<T, T, T>("strata::minimum", out, {&a, &b}, ExtremumF<T, false>{});
      });
  }
}

void compare_kernel(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  STRATA_CHECK(out.dtype() == kBool && a.dtype() == b.dtype(), "strata::compare",
               "kernel expects a Bool output and inputs of one dtype, got ", out.dtype(), ", ",
               a.dtype(), " and ", b.dtype());
  switch (op) {
    case CompareOp::Eq: return compare<CompareOp::Eq>(out, a, b);
    case CompareOp::Ne: return compare<CompareOp::Ne>(out, a, b);
    case CompareOp::Lt: return compare<CompareOp::Lt>(out, a, b);
    case CompareOp::Le: return compare<CompareOp::Le>(out, a, b);
    case CompareOp::Gt: return compare<CompareOp::Gt>(out, a, b);
    case CompareOp::Ge: return compare<CompareOp::Ge>(out, a, b);
    case CompareOp::LogicalAnd: return compare<CompareOp::LogicalAnd>(out, a, b);
    case CompareOp::LogicalOr: return compare<CompareOp::LogicalOr>(out, a, b);
  }
}

void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  check_dtypes("strata::where", out, a, b);
  dispatch_all(out.dtype(), "strata::where", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, bool, T, T>("strata::where", out, {&condition, &a, &b}, WhereF<T>{});
  });
}

void atan2_kernel(const Tensor& out, const Tensor& a, const Tensor& b) {
  check_dtypes("strata::atan2", out, a, b);
  dispatch_floating(out.dtype(), "strata::atan2", [&](auto tag) {
    using T = decltype(tag);
    run<T, Atan2F>("strata::atan2", out, a, b, Atan2F<T>{});
  });
}

}  // namespace strata::gpu
