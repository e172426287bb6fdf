#pragma once

#include <cstdint>
#include <iosfwd>
#include <type_traits>

#include "tensor/scalar_type.h"

namespace strata {

// A number passed to an operator (`x * 2.0`, `alpha=1`): a double, an int64 or a
// bool, remembering which, so `int_tensor * 2` stays Int64 while `* 2.5` promotes.
class Scalar {
 public:
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(double v) : kind_(ScalarType::Float64) { v_.d = v; }
  Scalar(float v) : Scalar(static_cast<double>(v)) {}
  Scalar(bool v) : kind_(ScalarType::Bool) { v_.i = v ? 1 : 0; }
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Scalar(I v) : kind_(ScalarType::Int64) {
    v_.i = static_cast<int64_t>(v);
  }

  // Float64 for floating values, Int64 for integers, Bool for bools.
  ScalarType kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == ScalarType::Float64; }
  bool is_integral() const { return kind_ == ScalarType::Int64; }
  bool is_bool() const { return kind_ == ScalarType::Bool; }

  template <class T>
  T to() const {
    return kind_ == ScalarType::Float64 ? static_cast<T>(v_.d) : static_cast<T>(v_.i);
  }
  double to_double() const { return to<double>(); }
  int64_t to_int() const { return to<int64_t>(); }
  bool to_bool() const { return kind_ == ScalarType::Float64 ? v_.d != 0.0 : v_.i != 0; }

  friend bool operator==(const Scalar& a, const Scalar& b) {
    return a.kind_ == b.kind_ && (a.kind_ == ScalarType::Float64 ? a.v_.d == b.v_.d : a.v_.i == b.v_.i);
  }

 private:
  ScalarType kind_;
  union {
    double d;
    int64_t i;
  } v_;
};

std::ostream& operator<<(std::ostream& out, const Scalar& s);

}  // namespace strata
