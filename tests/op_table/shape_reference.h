#pragma once

// Naive references for the shape and indexing ops: every output value is read from
// the input's row-major values at an input index computed from the output index,
// so a view's reference needs only its index arithmetic.

#include <strata/strata.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace strata::testing {

using Index = std::vector<int64_t>;

// A dim in [-rank, rank) (a 0-dim tensor counting as rank 1) made non-negative.
int64_t wrap_reference_dim(int64_t dim, int64_t rank);
// Row-major offset of index in sizes, and back.
int64_t ravel(const Index& index, const std::vector<int64_t>& sizes);
Index unravel(int64_t offset, const std::vector<int64_t>& sizes);

// The tensor of out_sizes (x's dtype) whose value at i is x's value at source(i).
Tensor remap_reference(const Tensor& x, const std::vector<int64_t>& out_sizes,
                       const std::function<Index(const Index&)>& source);
// x's values in row-major order under a new shape (one -1 is inferred).
Tensor reshape_reference(const Tensor& x, std::vector<int64_t> shape);
// x[..., start : start + length, ...] along dim.
Tensor narrow_reference(const Tensor& x, int64_t dim, int64_t start, int64_t length);

// Deterministic Int64 index values in [0, bound), repeating some, of the given
// shape; with `strided`, a non-contiguous view holding them (every other element
// of a longer buffer for 1-D, transposed storage otherwise).
Tensor make_index(const std::vector<int64_t>& sizes, int64_t bound, uint64_t seed = 0,
                  bool strided = false);

// Readers of a sample's boxed arguments.
std::vector<int64_t> int_list_arg(const Stack& args, size_t i);
std::optional<int64_t> optional_int_arg(const Stack& args, size_t i);

}  // namespace strata::testing
