#pragma once

// Dtype dispatch for the .cu files: calls f(T{}) with T the C++ type of dtype,
// among the listed types, or raises the op's error. Kernels are functor structs
// templated on T (no extended lambdas, so dispatch can be a host lambda).

#include <cstdint>
#include <type_traits>

#include "tensor/error.h"
#include "tensor/scalar_type.h"

namespace strata::gpu {

template <class T>
constexpr ScalarType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return kBool;
  else if constexpr (std::is_same_v<T, int64_t>)
    return kInt64;
  else if constexpr (std::is_same_v<T, float>)
    return kFloat32;
  else
    return kFloat64;
}

template <class... Ts, class F>
void dispatch_among(ScalarType dtype, const char* op, F&& f) {
  const bool found = ((dtype == dtype_of<Ts>() ? (f(Ts{}), true) : false) || ...);
  STRATA_CHECK(found, op, "unsupported dtype ", to_string(dtype), " on CUDA");
}

template <class F>
void dispatch_all(ScalarType dtype, const char* op, F&& f) {
  dispatch_among<bool, int64_t, float, double>(dtype, op, f);
}
template <class F>
void dispatch_numeric(ScalarType dtype, const char* op, F&& f) {
  dispatch_among<int64_t, float, double>(dtype, op, f);
}
template <class F>
void dispatch_floating(ScalarType dtype, const char* op, F&& f) {
  dispatch_among<float, double>(dtype, op, f);
}

}  // namespace strata::gpu
