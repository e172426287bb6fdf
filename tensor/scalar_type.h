#pragma once

#include <cstdint>
#include <iosfwd>

namespace strata {

// Element types. The order matters: type promotion between two kinds picks the
// larger enumerator (Bool < Int64 < Float32 < Float64), as NumPy/PyTorch do.
enum class ScalarType : int8_t { Bool = 0, Int64 = 1, Float32 = 2, Float64 = 3 };
inline constexpr int kNumScalarTypes = 4;

inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kInt64 = ScalarType::Int64;
inline constexpr ScalarType kFloat32 = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;

constexpr int64_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return 1;
    case ScalarType::Int64: return 8;
    case ScalarType::Float32: return 4;
    case ScalarType::Float64: return 8;
  }
  return 0;
}

constexpr bool is_floating_point(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64;
}

constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == ScalarType::Int64 || (include_bool && t == ScalarType::Bool);
}

// The type both operands of a binary op are computed in.
constexpr ScalarType promote_types(ScalarType a, ScalarType b) {
  return static_cast<int8_t>(a) >= static_cast<int8_t>(b) ? a : b;
}

const char* to_string(ScalarType t);
std::ostream& operator<<(std::ostream& out, ScalarType t);

template <class T>
struct CppTypeToScalarType;
template <>
struct CppTypeToScalarType<bool> {
  static constexpr ScalarType value = ScalarType::Bool;
};
template <>
struct CppTypeToScalarType<int64_t> {
  static constexpr ScalarType value = ScalarType::Int64;
};
template <>
struct CppTypeToScalarType<float> {
  static constexpr ScalarType value = ScalarType::Float32;
};
template <>
struct CppTypeToScalarType<double> {
  static constexpr ScalarType value = ScalarType::Float64;
};

template <class T>
inline constexpr ScalarType scalar_type_of = CppTypeToScalarType<T>::value;

}  // namespace strata
