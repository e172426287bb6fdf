// Factory operators: empty, zeros, ones, full, and tensor() from host values.
#include <cstring>

#include "dispatcher/library.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"

namespace strata {
namespace {

using FactorySig = Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Device>);

// BackendSelect: factories have no tensor argument, so the device option picks
// the backend key before the call reaches the kernels.
template <const char* kName>
Tensor factory_backend_select(DispatchKeySet keys, IntArrayRef size,
                              std::optional<ScalarType> dtype, std::optional<Device> device) {
  static const auto op = Dispatcher::singleton().findSchemaOrThrow(kName, "").typed<FactorySig>();
  DispatchKeySet backend(backend_key(device.value_or(kCPU).type));
  return op.redispatch((keys & DispatchKeySet::below(DispatchKey::BackendSelect)) | backend, size,
                       dtype, device);
}

Tensor empty_cpu(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return make_empty_tensor(size, dtype.value_or(kFloat32), device.value_or(kCPU), "strata::empty");
}

Tensor zeros_composite(IntArrayRef size, std::optional<ScalarType> dtype,
                       std::optional<Device> device) {
  Tensor out = empty(size, dtype, device);
  out.zero_();
  return out;
}

Tensor ones_composite(IntArrayRef size, std::optional<ScalarType> dtype,
                      std::optional<Device> device) {
  Tensor out = empty(size, dtype, device);
  out.fill_(1);
  return out;
}

ScalarType default_dtype_for(const Scalar& value) {
  if (value.is_bool()) return kBool;
  return value.is_integral() ? kInt64 : kFloat32;
}

Tensor full_composite(IntArrayRef size, const Scalar& value, std::optional<ScalarType> dtype,
                      std::optional<Device> device) {
  Tensor out = empty(size, dtype.value_or(default_dtype_for(value)), device);
  out.fill_(value);
  return out;
}

constexpr char kEmpty[] = "strata::empty";

STRATA_LIBRARY(strata, m) {
  m.def("empty(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> "
        "Tensor");
}

STRATA_LIBRARY_IMPL(strata, BackendSelect, m) {
  m.impl("empty", &factory_backend_select<kEmpty>);
}

STRATA_LIBRARY_IMPL(strata, CPU, m) { m.impl("empty", &empty_cpu); }

STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) {
  m.impl("zeros", &zeros_composite);
  m.impl("ones", &ones_composite);
  m.impl("full", &full_composite);
}

template <class T>
Tensor tensor_from_values(const T* values, size_t count, IntArrayRef shape) {
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  STRATA_CHECK(numel == static_cast<int64_t>(count), "strata::tensor", count,
               " values cannot fill a tensor of shape ", shape_string(shape), " (", numel,
               " elements)");
  Tensor out = make_empty_tensor(shape, scalar_type_of<T>, kCPU, "strata::tensor");
  T* data = out.data_ptr<T>();
  for (size_t i = 0; i < count; ++i) data[i] = values[i];
  return out;
}

}  // namespace

Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  static const auto op = Dispatcher::singleton().findSchemaOrThrow(kEmpty, "").typed<FactorySig>();
  return op.call(size, dtype, device);
}

Tensor zeros(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  static const auto op =
      Dispatcher::singleton().findSchemaOrThrow("strata::zeros", "").typed<FactorySig>();
  return op.call(size, dtype, device);
}

Tensor ones(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  static const auto op =
      Dispatcher::singleton().findSchemaOrThrow("strata::ones", "").typed<FactorySig>();
  return op.call(size, dtype, device);
}

Tensor full(IntArrayRef size, const Scalar& value, std::optional<ScalarType> dtype,
            std::optional<Device> device) {
  static const auto op =
      Dispatcher::singleton()
          .findSchemaOrThrow("strata::full", "")
          .typed<Tensor(IntArrayRef, const Scalar&, std::optional<ScalarType>,
                        std::optional<Device>)>();
  return op.call(size, value, dtype, device);
}

Tensor tensor(std::initializer_list<double> values, IntArrayRef shape) {
  return tensor_from_values(values.begin(), values.size(), shape);
}

Tensor tensor(std::initializer_list<double> values) {
  return tensor(values, {static_cast<int64_t>(values.size())});
}

template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef shape) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<char> bytes(values.begin(), values.end());
    Tensor out = make_empty_tensor(shape, kBool, kCPU, "strata::tensor");
    STRATA_CHECK(out.numel() == static_cast<int64_t>(values.size()), "strata::tensor",
                 values.size(), " values cannot fill a tensor of shape ", shape_string(shape));
    std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
    return out;
  } else {
    return tensor_from_values(values.data(), values.size(), shape);
  }
}

template Tensor tensor<double>(const std::vector<double>&, IntArrayRef);
template Tensor tensor<float>(const std::vector<float>&, IntArrayRef);
template Tensor tensor<int64_t>(const std::vector<int64_t>&, IntArrayRef);
template Tensor tensor<bool>(const std::vector<bool>&, IntArrayRef);

}  // namespace strata
