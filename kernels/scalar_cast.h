#pragma once

// Floating values into integers: a cast is undefined behaviour unless the value is
// finite and in range. A Scalar argument (a fill value, alpha) as a kernel's
// element type is an error naming the op otherwise.

#include <limits>
#include <type_traits>

#include "tensor/error.h"
#include "tensor/scalar.h"
#include "tensor/scalar_type.h"

namespace strata {

// Whether the floating value v casts to the signed integer type T with a defined
// result: finite and in [-2^(bits-1), 2^(bits-1)). NaN is not.
template <class T, class F>
constexpr bool has_integer_equivalent(F v) {
  constexpr F kEnd = static_cast<F>(static_cast<double>(std::numeric_limits<T>::max() / 2 + 1) * 2);
  return v >= -kEnd && v < kEnd;
}

template <class T>
T scalar_as(const Scalar& value, const char* op) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (value.is_floating_point()) {
      const double v = value.to_double();
      STRATA_CHECK(has_integer_equivalent<T>(v), op, "the value ", v, " has no ", scalar_type_of<T>,
                   " equivalent (a scalar for an integer tensor must be finite and in range)");
    }
  }
  return value.to<T>();
}

}  // namespace strata
