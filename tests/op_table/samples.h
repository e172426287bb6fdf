#pragma once

// Building sample inputs: deterministic values, and the layouts every op must
// handle (0-dim, size-1, empty, broadcast, transposed, sliced, expanded).

#include <cstdint>
#include <string>
#include <vector>

#include "tests/op_table/op_info.h"

namespace strata::testing {

// Values in [low, high), deterministic in (shape, seed); integers for Int64, and
// for Bool values alternate. Contiguous.
Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, double low = -2.0, double high = 2.0,
                   uint64_t seed = 0);

// A tensor with these sizes but the given layout, holding make_tensor's values.
enum class Layout { Contiguous, Transposed, Sliced, Expanded };
const char* to_string(Layout layout);
Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, Layout layout, double low = -2.0,
                   double high = 2.0, uint64_t seed = 0);

// A view of base's storage with explicit geometry (independent of the view ops).
Tensor strided_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset);

// The shapes and layouts every unary-like op is checked on.
struct ShapeCase {
  std::vector<int64_t> sizes;
  Layout layout;
  std::string description() const;
};
const std::vector<ShapeCase>& unary_cases();
// Pairs of shapes for broadcasting binary ops.
struct ShapePairCase {
  ShapeCase a;
  ShapeCase b;
  std::string description() const;
};
const std::vector<ShapePairCase>& binary_cases();

// Samples with one input per unary case, values in [low, high).
std::vector<Sample> unary_samples(ScalarType dtype, double low = -2.0, double high = 2.0);
// Samples with two inputs per binary case.
std::vector<Sample> binary_samples(ScalarType dtype, double low = -2.0, double high = 2.0);

}  // namespace strata::testing
