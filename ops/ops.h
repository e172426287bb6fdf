#pragma once

// The operators of Strata as C++ functions. Each calls its operator through the
// dispatcher, so transforms and modes see it; the operator itself (schema,
// kernels, derivative and batching rules) is defined in the ops/ file of its family.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "tensor/array_ref.h"
#include "tensor/device.h"
#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace strata {

// ---- creation (ops/creation.cpp) -------------------------------------------------
// Factories default to Float32 on the CPU, as PyTorch does; `full` infers its
// dtype from the value (a double gives Float32, an integer Int64, a bool Bool).
Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype = std::nullopt,
             std::optional<Device> device = std::nullopt);
Tensor zeros(IntArrayRef size, std::optional<ScalarType> dtype = std::nullopt,
             std::optional<Device> device = std::nullopt);
Tensor ones(IntArrayRef size, std::optional<ScalarType> dtype = std::nullopt,
            std::optional<Device> device = std::nullopt);
Tensor full(IntArrayRef size, const Scalar& value, std::optional<ScalarType> dtype = std::nullopt,
            std::optional<Device> device = std::nullopt);

// A CPU tensor holding `values` (row-major) with the given shape (1-D if omitted);
// the dtype follows the element type: double -> Float64, float -> Float32,
// int64_t -> Int64, bool -> Bool.
Tensor tensor(std::initializer_list<double> values, IntArrayRef shape);
Tensor tensor(std::initializer_list<double> values);
template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef shape);
template <class T>
Tensor tensor(const std::vector<T>& values) {
  return tensor(values, {static_cast<int64_t>(values.size())});
}

// ---- elementwise binary (ops/elementwise_binary.cpp) --------------------------------
// Broadcasting (NumPy rules) and type promotion (see result_type).
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);

}  // namespace strata
