#pragma once

#include "dispatcher/dispatcher.h"

// The typed handle of operator NAME.OVERLOAD with C++ signature SIG, looked up once
// per call site (a function-local static), so a call costs no lookup:
//   return STRATA_OP("strata::add", "Tensor", Tensor(const Tensor&, const Tensor&,
//                    const Scalar&)).call(a, b, alpha);
#define STRATA_OP(name, overload, ...)                                                   \
  ([]() -> const ::strata::TypedOperatorHandle<__VA_ARGS__>& {                           \
    static const ::strata::TypedOperatorHandle<__VA_ARGS__> handle =                     \
        ::strata::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<__VA_ARGS__>(); \
    return handle;                                                                       \
  }())
