// Binary and fused elementwise kernels: arithmetic, comparisons, where, addcmul, mul_add.
#include <array>
#include <cmath>
#include <type_traits>
#include <utility>

#include "kernels/cpu/elementwise_rows.h"
#include "kernels/scalar_cast.h"
#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// Int64 +, - and * (also inside addcmul and mul_add) wrap around (two's
// complement), as PyTorch's do in practice: computed unsigned, since signed
// overflow is undefined behaviour.
template <class T>
constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
T wrapping_add(T a, T b) {
  if constexpr (kWraps<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  } else {
    return a + b;
  }
}
template <class T>
T wrapping_mul(T a, T b) {
  if constexpr (kWraps<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) * static_cast<std::make_unsigned_t<T>>(b));
  } else {
    return a * b;
  }
}

// On Bool, + is `or` and * is `and`, as in PyTorch.
template <class T>
struct Add {
  T alpha;
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || (alpha && b);
    else
      return wrapping_add(a, wrapping_mul(alpha, b));
  }
};
template <class T>
struct Sub {
  T alpha;
  T operator()(T a, T b) const {
    if constexpr (kWraps<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) - static_cast<U>(wrapping_mul(alpha, b)));
    } else {
      return a - alpha * b;
    }
  }
};
struct Mul {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else
      return wrapping_mul(a, b);
  }
};
struct Div {
  template <class T>
  T operator()(T a, T b) const {
    return a / b;
  }
};
struct Pow {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return std::pow(a, b);
    else
      return int_pow(a, b);
  }
};
// A NaN on either side wins, as in PyTorch (std::max would keep the first argument).
struct Maximum {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b != b) return b;
    }
    return a < b ? b : a;
  }
};
struct Minimum {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b != b) return b;
    }
    return b < a ? b : a;
  }
};

// out = op(a, b) in out's dtype, one of Ts; make_op(T{}) builds the op for T.
template <class... Ts, class MakeOp>
void typed_binary(const Tensor& out, const Tensor& a, const Tensor& b, const char* name,
                  const MakeOp& make_op) {
  STRATA_CHECK(a.dtype() == out.dtype() && b.dtype() == out.dtype(), name,
               "kernel expects inputs of the output's dtype ", out.dtype(), ", got ", a.dtype(),
               " and ", b.dtype());
  dispatch_among<Ts...>(out.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    run_binary<T, T>(out, a, b, make_op(tag));
  });
}

template <class Op>
constexpr auto stateless = [](auto) { return Op{}; };

template <template <class> class Op>
auto scaled_by(const Scalar& alpha, const char* op) {
  return [&alpha, op](auto tag) { return Op<decltype(tag)>{scalar_as<decltype(tag)>(alpha, op)}; };
}

}  // namespace

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                   const Scalar& alpha) {
  switch (op) {
    case BinaryOp::Add:
      return typed_binary<bool, int64_t, float, double>(out, a, b, "strata::add",
                                                        scaled_by<Add>(alpha, "strata::add"));
    case BinaryOp::Sub:
      return typed_binary<int64_t, float, double>(out, a, b, "strata::sub",
                                                  scaled_by<Sub>(alpha, "strata::sub"));
    case BinaryOp::Mul:
      return typed_binary<bool, int64_t, float, double>(out, a, b, "strata::mul", stateless<Mul>);
    case BinaryOp::Div:
      return typed_binary<float, double>(out, a, b, "strata::div", stateless<Div>);
    case BinaryOp::Pow:
      return typed_binary<int64_t, float, double>(out, a, b, "strata::pow", stateless<Pow>);
    case BinaryOp::Maximum:
      return typed_binary<bool, int64_t, float, double>(out, a, b, "strata::maximum",
                                                        stateless<Maximum>);
    case BinaryOp::Minimum:
      return typed_binary<bool, int64_t, float, double>(out, a, b, "strata::minimum",
                                                        stateless<Minimum>);
  }
}

void compare_kernel(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  STRATA_CHECK(out.dtype() == kBool && a.dtype() == b.dtype(), "strata::compare",
               "kernel expects a Bool output and inputs of one dtype, got ", out.dtype(), ", ",
               a.dtype(), " and ", b.dtype());
  dispatch_all(a.dtype(), "strata::compare", [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto fn) { run_binary<bool, T>(out, a, b, fn); };
    switch (op) {
      case CompareOp::Eq: return run([](T x, T y) { return x == y; });
      case CompareOp::Ne: return run([](T x, T y) { return x != y; });
      case CompareOp::Lt: return run([](T x, T y) { return x < y; });
      case CompareOp::Le: return run([](T x, T y) { return x <= y; });
      case CompareOp::Gt: return run([](T x, T y) { return x > y; });
      case CompareOp::Ge: return run([](T x, T y) { return x >= y; });
      case CompareOp::LogicalAnd: return run([](T x, T y) { return x != T(0) && y != T(0); });
      case CompareOp::LogicalOr: return run([](T x, T y) { return x != T(0) || y != T(0); });
    }
  });
}

void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  STRATA_CHECK(condition.dtype() == kBool && a.dtype() == out.dtype() && b.dtype() == out.dtype(),
               "strata::where", "kernel expects a Bool condition and inputs of the output's dtype ",
               out.dtype(), ", got ", condition.dtype(), ", ", a.dtype(), " and ", b.dtype());
  dispatch_all(out.dtype(), "strata::where", [&](auto tag) {
    using T = decltype(tag);
    auto row = [](char** data, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) {
        T* out = reinterpret_cast<T*>(data[0]);
        const bool* c = reinterpret_cast<const bool*>(data[1]);
        const T* x = reinterpret_cast<const T*>(data[2]);
        const T* y = reinterpret_cast<const T*>(data[3]);
        for (int64_t i = 0; i < n; ++i) out[i] = c[i] ? x[i] : y[i];
      } else {
        for (int64_t i = 0; i < n; ++i) {
          element<T>(data[0], s[0], i) = element<const bool>(data[1], s[1], i)
                                             ? element<const T>(data[2], s[2], i)
                                             : element<const T>(data[3], s[3], i);
        }
      }
    };
    run_rows(out, {&condition, &a, &b}, row);
  });
}

namespace {

// Note [Broadcast patterns]
// A contiguous output row whose inputs are each contiguous or broadcast (stride
// 0: bit k of kPattern for input k) runs one loop per pattern, so each
// vectorizes with the broadcast values hoisted; other rows take a strided loop.
// The fused ops use it: under vmap and jacfwd their rows mix a batched tangent
// with broadcast primals.
template <class T, int kPattern, class Formula, size_t... K>
void pattern_row(char** data, int64_t n, const Formula& f, std::index_sequence<K...>) {
  T* out = reinterpret_cast<T*>(data[0]);
  const T* in[] = {reinterpret_cast<const T*>(data[K + 1])...};
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[K][(kPattern >> K & 1) ? 0 : i]...);
}

template <class T, size_t kInputs, class Formula, int... kPatterns>
constexpr auto pattern_rows(std::integer_sequence<int, kPatterns...>) {
  using Row = void (*)(char**, int64_t, const Formula&, std::make_index_sequence<kInputs>);
  return std::array<Row, sizeof...(kPatterns)>{&pattern_row<T, kPatterns, Formula>...};
}

// out = f(inputs...) elementwise over their broadcast; all have out's dtype T.
template <class T, size_t kInputs, class Formula>
void run_fused(const Tensor& out, const std::array<const Tensor*, kInputs>& inputs,
               const Formula& f) {
  static constexpr auto kRows =
      pattern_rows<T, kInputs, Formula>(std::make_integer_sequence<int, 1 << kInputs>());
  auto row = [&f](char** data, const int64_t* s, int64_t n) {
    int pattern = 0;
    bool unit_or_broadcast = s[0] == sizeof(T);
    for (size_t k = 0; k < kInputs; ++k) {
      if (s[k + 1] == 0) pattern |= 1 << k;
      unit_or_broadcast &= s[k + 1] == 0 || s[k + 1] == sizeof(T);
    }
    if (unit_or_broadcast) return kRows[pattern](data, n, f, std::make_index_sequence<kInputs>());
    [&]<size_t... K>(std::index_sequence<K...>) {
      for (int64_t i = 0; i < n; ++i) {
        element<T>(data[0], s[0], i) = f(element<const T>(data[K + 1], s[K + 1], i)...);
      }
    }
    (std::make_index_sequence<kInputs>());
  };
  [&]<size_t... K>(std::index_sequence<K...>) { run_rows(out, {inputs[K]...}, row); }
  (std::make_index_sequence<kInputs>());
}

void check_fused_dtypes(const char* op, const Tensor& out,
                        std::initializer_list<const Tensor*> in) {
  for (const Tensor* t : in) {
    STRATA_CHECK(t->dtype() == out.dtype(), op, "kernel expects inputs of the output's dtype ",
                 out.dtype(), ", got ", t->dtype());
  }
}

}  // namespace

void addcmul_kernel(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                    const Scalar& value) {
  check_fused_dtypes("strata::addcmul", out, {&self, &a, &b});
  dispatch_numeric(out.dtype(), "strata::addcmul", [&](auto tag) {
    using T = decltype(tag);
    const T v = scalar_as<T>(value, "strata::addcmul");
    run_fused<T, 3>(out, {&self, &a, &b}, [v](T x, T y, T z) {
      return wrapping_add(x, wrapping_mul(wrapping_mul(v, y), z));
    });
  });
}

void mul_add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                    const Tensor& d) {
  check_fused_dtypes("strata::mul_add", out, {&a, &b, &c, &d});
  dispatch_numeric(out.dtype(), "strata::mul_add", [&](auto tag) {
    using T = decltype(tag);
    run_fused<T, 4>(out, {&a, &b, &c, &d}, [](T w, T x, T y, T z) {
      return wrapping_add(wrapping_mul(w, x), wrapping_mul(y, z));
    });
  });
}

void relu_backward_kernel(const Tensor& out, const Tensor& grad, const Tensor& output) {
  check_fused_dtypes("strata::relu_backward", out, {&grad, &output});
  dispatch_numeric(out.dtype(), "strata::relu_backward", [&](auto tag) {
    using T = decltype(tag);
    run_fused<T, 2>(out, {&grad, &output}, [](T g, T y) { return y > T(0) ? g : T(0); });
  });
}

}  // namespace strata::cpu
