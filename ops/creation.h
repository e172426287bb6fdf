#pragma once

// Factories (ops/creation.cpp) and random ops (ops/random.cpp). Factories default
// to Float32 on the CPU, as PyTorch does; `full` infers its dtype from the value (a
// double gives Float32, an integer Int64, a bool Bool), `arange` from its arguments.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "tensor/array_ref.h"
#include "tensor/device.h"
#include "tensor/generator.h"
#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace strata {

Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype = std::nullopt,
             std::optional<Device> device = std::nullopt);
Tensor zeros(IntArrayRef size, std::optional<ScalarType> dtype = std::nullopt,
             std::optional<Device> device = std::nullopt);
Tensor ones(IntArrayRef size, std::optional<ScalarType> dtype = std::nullopt,
            std::optional<Device> device = std::nullopt);
Tensor full(IntArrayRef size, const Scalar& value, std::optional<ScalarType> dtype = std::nullopt,
            std::optional<Device> device = std::nullopt);
// [0, end) and [start, end) by step; Int64 when all are integers, else Float32.
Tensor arange(const Scalar& end, std::optional<ScalarType> dtype = std::nullopt);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<ScalarType> dtype = std::nullopt);
// The same on a device (made on the host and copied): positions that index or
// mask a tensor live where it does.
Tensor arange(const Scalar& end, std::optional<ScalarType> dtype, Device device);
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                std::optional<ScalarType> dtype = std::nullopt);
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt,
           std::optional<ScalarType> dtype = std::nullopt);
Tensor eye(int64_t n, std::optional<int64_t> m, std::optional<ScalarType> dtype, Device device);
// Same shape (and, unless given, dtype and device) as `like`.
Tensor empty_like(const Tensor& like, std::optional<ScalarType> dtype = std::nullopt);
Tensor zeros_like(const Tensor& like, std::optional<ScalarType> dtype = std::nullopt);
Tensor ones_like(const Tensor& like, std::optional<ScalarType> dtype = std::nullopt);
Tensor full_like(const Tensor& like, const Scalar& value,
                 std::optional<ScalarType> dtype = std::nullopt);

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

// Random ops (ops/random.cpp): counter-based (Note [Counter-based random numbers]),
// so results never depend on the thread count. Floating dtypes only, except randint
// (Int64 by default) and bernoulli (the dtype of p).
Tensor rand(IntArrayRef size, const Generator& gen, std::optional<ScalarType> dtype = std::nullopt);
Tensor randn(IntArrayRef size, const Generator& gen,
             std::optional<ScalarType> dtype = std::nullopt);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const Generator& gen,
               std::optional<ScalarType> dtype = std::nullopt);
// 1 with probability p (elementwise), else 0.
Tensor bernoulli(const Tensor& p, const Generator& gen);
Tensor normal(const Tensor& mean, const Tensor& std, const Generator& gen);
// The same, from default_generator().
Tensor rand(IntArrayRef size, std::optional<ScalarType> dtype = std::nullopt);
Tensor randn(IntArrayRef size, std::optional<ScalarType> dtype = std::nullopt);

}  // namespace strata
