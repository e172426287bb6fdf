#pragma once

// The dtype dispatch of the linear-algebra kernels (linalg.cpp, linalg_loops.cpp).

#include <cstdint>

#include "tensor/error.h"
#include "tensor/scalar_type.h"

namespace strata::cpu {

// Calls f(T{}) with T the C++ type of a linear-algebra dtype (Int64, Float32,
// Float64); Bool has no products.
template <class F>
void dispatch_linalg_types(ScalarType dtype, const char* op, F&& f) {
  switch (dtype) {
    case ScalarType::Int64: return f(int64_t{});
    case ScalarType::Float32: return f(float{});
    case ScalarType::Float64: return f(double{});
    default: break;
  }
  STRATA_FAIL(op, "unsupported dtype ", dtype, " (expected Int64, Float32 or Float64)");
}

}  // namespace strata::cpu
