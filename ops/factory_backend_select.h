#pragma once

// The BackendSelect kernel of a factory operator: a factory has no tensor argument
// to name a backend, so its `Device? device` option (the last argument of every
// factory schema) picks the backend key before the call reaches the kernels. Also
// the factories' `ScalarType? dtype` option as their shape functions read it.

#include <optional>
#include <tuple>

#include "dispatcher/dispatcher.h"
#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace strata {

template <const char* kName, const char* kOverload, class Sig>
struct FactoryBackendSelect;

template <const char* kName, const char* kOverload, class... Args>
struct FactoryBackendSelect<kName, kOverload, Tensor(Args...)> {
  static Tensor kernel(DispatchKeySet keys, Args... args) {
    static const auto op = Dispatcher::singleton()
                               .findSchemaOrThrow(kName, kOverload)
                               .template typed<Tensor(Args...)>();
    const std::optional<Device>& device = std::get<sizeof...(Args) - 1>(std::tie(args...));
    const DispatchKeySet backend(backend_key(device.value_or(kCPU).type));
    return op.redispatch((keys & DispatchKeySet::below(DispatchKey::BackendSelect)) | backend,
                         args...);
  }
};

// A boxed `ScalarType?` argument.
inline std::optional<ScalarType> dtype_arg(const IValue& v) {
  if (v.is_none()) return std::nullopt;
  return v.to_scalar_type();
}

}  // namespace strata
