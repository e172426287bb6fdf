#pragma once

#include "tensor/error.h"
#include "tensor/scalar_type.h"

// STRATA_DISPATCH_*(TYPE, NAME, BODY) calls the lambda BODY with `scalar_t` bound to
// the C++ type of dtype TYPE; NAME tags the error for an unsupported dtype.
#define STRATA_DISPATCH_CASE(enum_value, cpp_type, ...) \
  case ::strata::ScalarType::enum_value: {              \
    using scalar_t = cpp_type;                          \
    return __VA_ARGS__();                               \
  }

#define STRATA_DISPATCH_ALL_TYPES(TYPE, NAME, ...)                             \
  [&] {                                                                        \
    switch (TYPE) {                                                            \
      STRATA_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                            \
      STRATA_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                        \
      STRATA_DISPATCH_CASE(Float32, float, __VA_ARGS__)                        \
      STRATA_DISPATCH_CASE(Float64, double, __VA_ARGS__)                       \
    }                                                                          \
    STRATA_FAIL(NAME, "unsupported dtype ", ::strata::to_string(TYPE));        \
  }()

#define STRATA_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                        \
  [&] {                                                                        \
    switch (TYPE) {                                                            \
      STRATA_DISPATCH_CASE(Float32, float, __VA_ARGS__)                        \
      STRATA_DISPATCH_CASE(Float64, double, __VA_ARGS__)                       \
      default: break;                                                          \
    }                                                                          \
    STRATA_FAIL(NAME, "expected a floating-point dtype, got ", ::strata::to_string(TYPE)); \
  }()
