#pragma once

// Naive references: plain loops over values read back with to_vector, with
// broadcasting and reductions written out index by index. Independent of the
// kernels they check (only the tensor core's readers and tensor() are shared).

#include <strata/strata.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace strata::testing {

// Row-major values and sizes of a tensor, as doubles.
struct HostArray {
  std::vector<int64_t> sizes;
  std::vector<double> values;

  static HostArray of(const Tensor& t);
  int64_t numel() const { return static_cast<int64_t>(values.size()); }
  // Value at a multi-index of a shape this array broadcasts to.
  double at_broadcast(const std::vector<int64_t>& index) const;
};

// A tensor of dtype holding values (converted) with the given sizes.
Tensor from_values(const std::vector<double>& values, const std::vector<int64_t>& sizes,
                   ScalarType dtype);

// The type-promotion rule of DESIGN.md (dims > 0-dim > wrapped numbers, a lower
// class winning only with a higher category), written out independently.
ScalarType reference_result_type(const std::vector<Tensor>& operands);

std::vector<int64_t> broadcast_sizes(const std::vector<std::vector<int64_t>>& shapes);
// Calls f(index) for every multi-index of sizes in row-major order.
void for_each_index(const std::vector<int64_t>& sizes,
                    const std::function<void(const std::vector<int64_t>&)>& f);

Tensor map_unary(const Tensor& x, ScalarType out_dtype, const std::function<double(double)>& f);
Tensor map_binary(const Tensor& a, const Tensor& b, ScalarType out_dtype,
                  const std::function<double(double, double)>& f);
Tensor map_nary(const std::vector<Tensor>& operands, ScalarType out_dtype,
                const std::function<double(const std::vector<double>&)>& f);

// Reduces x over `dims` (all dims if empty), folding each group's values (in
// row-major order) with `reduce`.
Tensor reduce_values(const Tensor& x, std::vector<int64_t> dims, bool keepdim, ScalarType out_dtype,
                     const std::function<double(const std::vector<double>&)>& reduce);

// Tensor in[i], or none past the end (an optional trailing operand).
std::optional<Tensor> input_or_none(const std::vector<Tensor>& in, size_t i);
// Positions per channel of an input [N, C, *] (the product of *).
int64_t positions(const std::vector<int64_t>& sizes);

}  // namespace strata::testing
