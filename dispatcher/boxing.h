#pragma once

// Conversions between C++ kernel arguments and IValues, used to box unboxed
// kernels automatically (so fallbacks and modes handle every op) and to call
// boxed kernels through typed handles. Included only by the dispatcher headers
// that need it, never by tensor/.

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dispatcher/function_schema.h"
#include "dispatcher/ivalue.h"
#include "tensor/array_ref.h"

namespace strata::boxing {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// The schema type a C++ parameter or result type stands for, to check that a
// kernel's signature matches the operator's schema at registration time.
template <class T, class = void>
struct SchemaTypeOf;
#define STRATA_SCHEMA_TYPE_OF(CPP, KIND, IS_LIST) \
  template <>                                     \
  struct SchemaTypeOf<CPP> {                      \
    static SchemaType get() {                     \
      SchemaType t;                               \
      t.kind = SchemaType::Kind::KIND;            \
      t.is_list = IS_LIST;                        \
      return t;                                   \
    }                                             \
  };
STRATA_SCHEMA_TYPE_OF(Tensor, Tensor, false)
STRATA_SCHEMA_TYPE_OF(int64_t, Int, false)
STRATA_SCHEMA_TYPE_OF(double, Float, false)
STRATA_SCHEMA_TYPE_OF(bool, Bool, false)
STRATA_SCHEMA_TYPE_OF(Scalar, Scalar, false)
STRATA_SCHEMA_TYPE_OF(ScalarType, ScalarType, false)
STRATA_SCHEMA_TYPE_OF(Device, Device, false)
STRATA_SCHEMA_TYPE_OF(std::string, Str, false)
STRATA_SCHEMA_TYPE_OF(std::string_view, Str, false)
STRATA_SCHEMA_TYPE_OF(IntArrayRef, Int, true)
STRATA_SCHEMA_TYPE_OF(std::vector<int64_t>, Int, true)
STRATA_SCHEMA_TYPE_OF(ArrayRef<double>, Float, true)
STRATA_SCHEMA_TYPE_OF(std::vector<double>, Float, true)
STRATA_SCHEMA_TYPE_OF(ArrayRef<Tensor>, Tensor, true)
STRATA_SCHEMA_TYPE_OF(std::vector<Tensor>, Tensor, true)
STRATA_SCHEMA_TYPE_OF(Generator, Generator, false)
#undef STRATA_SCHEMA_TYPE_OF
template <class T>
struct SchemaTypeOf<std::optional<T>> {
  static SchemaType get() {
    SchemaType t = SchemaTypeOf<T>::get();
    t.is_optional = true;
    return t;
  }
};

// What a kernel's C++ signature says about its arguments and results.
struct CppSignature {
  const std::type_info* type = nullptr;  // typeid(Ret(Args...)), for exact matching
  std::vector<SchemaType> arguments;
  std::vector<SchemaType> returns;
  std::string text;  // for messages
};

// "(Tensor, int[]) -> (Tensor)"
std::string signature_text(const std::vector<SchemaType>& arguments,
                           const std::vector<SchemaType>& returns);

template <class Ret>
void append_returns(std::vector<SchemaType>& out) {
  using R = std::decay_t<Ret>;
  if constexpr (std::is_void_v<R>) {
  } else if constexpr (requires { std::tuple_size<R>::value; }) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      (out.push_back(SchemaTypeOf<std::decay_t<std::tuple_element_t<I, R>>>::get()), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<R>>());
  } else {
    out.push_back(SchemaTypeOf<R>::get());
  }
}

template <class Ret, class... Args>
CppSignature make_cpp_signature() {
  CppSignature s;
  s.type = &typeid(Ret(Args...));
  (s.arguments.push_back(SchemaTypeOf<std::decay_t<Args>>::get()), ...);
  append_returns<Ret>(s.returns);
  s.text = signature_text(s.arguments, s.returns);
  return s;
}

// IValue -> C++ argument. References into the IValue stay valid while the boxed
// arguments are on the stack, i.e. for the whole kernel call.
template <class T>
struct FromIValue;
template <>
struct FromIValue<Tensor> {
  static const Tensor& get(const IValue& v) { return v.to_tensor(); }
};
template <>
struct FromIValue<int64_t> {
  static int64_t get(const IValue& v) { return v.to_int(); }
};
template <>
struct FromIValue<double> {
  static double get(const IValue& v) { return v.to_double(); }
};
template <>
struct FromIValue<bool> {
  static bool get(const IValue& v) { return v.to_bool(); }
};
template <>
struct FromIValue<Scalar> {
  static Scalar get(const IValue& v) { return v.to_scalar(); }
};
template <>
struct FromIValue<ScalarType> {
  static ScalarType get(const IValue& v) { return v.to_scalar_type(); }
};
template <>
struct FromIValue<Device> {
  static Device get(const IValue& v) { return v.to_device(); }
};
template <>
struct FromIValue<std::string> {
  static const std::string& get(const IValue& v) { return v.to_string_ref(); }
};
template <>
struct FromIValue<std::string_view> {
  static std::string_view get(const IValue& v) { return v.to_string_ref(); }
};
template <>
struct FromIValue<IntArrayRef> {
  static IntArrayRef get(const IValue& v) { return v.to_int_list(); }
};
template <>
struct FromIValue<std::vector<int64_t>> {
  static const std::vector<int64_t>& get(const IValue& v) { return v.to_int_list(); }
};
template <>
struct FromIValue<ArrayRef<double>> {
  static ArrayRef<double> get(const IValue& v) { return v.to_double_list(); }
};
template <>
struct FromIValue<std::vector<double>> {
  static const std::vector<double>& get(const IValue& v) { return v.to_double_list(); }
};
template <>
struct FromIValue<ArrayRef<Tensor>> {
  static ArrayRef<Tensor> get(const IValue& v) { return v.to_tensor_list(); }
};
template <>
struct FromIValue<std::vector<Tensor>> {
  static const std::vector<Tensor>& get(const IValue& v) { return v.to_tensor_list(); }
};
template <>
struct FromIValue<Generator> {
  static const Generator& get(const IValue& v) { return v.to_generator(); }
};
template <class T>
struct FromIValue<std::optional<T>> {
  static std::optional<T> get(const IValue& v) {
    if (v.is_none()) return std::nullopt;
    return FromIValue<T>::get(v);
  }
};

// C++ argument or result -> IValue.
inline IValue to_ivalue(const Tensor& t) { return IValue(t); }
inline IValue to_ivalue(int64_t v) { return IValue(v); }
inline IValue to_ivalue(double v) { return IValue(v); }
inline IValue to_ivalue(bool v) { return IValue(v); }
inline IValue to_ivalue(const Scalar& v) { return IValue(v); }
inline IValue to_ivalue(ScalarType v) { return IValue(v); }
inline IValue to_ivalue(Device v) { return IValue(v); }
inline IValue to_ivalue(std::string_view v) { return IValue(std::string(v)); }
inline IValue to_ivalue(const std::string& v) { return IValue(v); }
inline IValue to_ivalue(IntArrayRef v) { return IValue(v.vec()); }
inline IValue to_ivalue(const std::vector<int64_t>& v) { return IValue(v); }
inline IValue to_ivalue(ArrayRef<double> v) { return IValue(v.vec()); }
inline IValue to_ivalue(const std::vector<double>& v) { return IValue(v); }
inline IValue to_ivalue(ArrayRef<Tensor> v) { return IValue(v.vec()); }
inline IValue to_ivalue(const std::vector<Tensor>& v) { return IValue(v); }
inline IValue to_ivalue(const Generator& g) { return IValue(g); }
template <class T>
IValue to_ivalue(const std::optional<T>& v) {
  return v ? to_ivalue(*v) : IValue();
}

template <class Ret>
void push_results(Stack& stack, Ret&& result) {
  using R = std::decay_t<Ret>;
  if constexpr (requires { std::tuple_size<R>::value; }) {
    std::apply([&](auto&&... parts) { (stack.push_back(to_ivalue(parts)), ...); }, result);
  } else {
    stack.push_back(to_ivalue(result));
  }
}

template <class Ret>
constexpr size_t num_results() {
  using R = std::decay_t<Ret>;
  if constexpr (std::is_void_v<R>) {
    return 0;
  } else if constexpr (requires { std::tuple_size<R>::value; }) {
    return std::tuple_size_v<R>;
  } else {
    return 1;
  }
}

// Reads a by-value result back from the stack after a boxed call.
template <class R>
R pop_result(Stack& stack, size_t first) {
  if constexpr (requires { std::tuple_size<R>::value; }) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return R(FromIValue<std::decay_t<std::tuple_element_t<I, R>>>::get(stack[first + I])...);
    }
    (std::make_index_sequence<std::tuple_size_v<R>>());
  } else {
    return R(FromIValue<R>::get(stack[first]));
  }
}

}  // namespace strata::boxing
