#pragma once

// A Scalar argument (a fill value, alpha) as a kernel's element type. A floating
// Scalar becomes an integer only when it is finite and in range: the cast is
// undefined behaviour otherwise, so that is an error naming the op.

#include <limits>
#include <type_traits>

#include "tensor/error.h"
#include "tensor/scalar.h"
#include "tensor/scalar_type.h"

namespace strata {

template <class T>
T scalar_as(const Scalar& value, const char* op) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (value.is_floating_point()) {
      const double v = value.to_double();
      constexpr double kEnd = static_cast<double>(std::numeric_limits<T>::max() / 2 + 1) * 2;
      STRATA_CHECK(v >= -kEnd && v < kEnd, op, "the value ", v, " has no ", scalar_type_of<T>,
                   " equivalent (a scalar for an integer tensor must be finite and in range)");
    }
  }
  return value.to<T>();
}

}  // namespace strata
