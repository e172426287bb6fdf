#pragma once

// Shape plumbing of the linalg decompositions (matmul, outer, einsum).
//
// Note [Linalg shape plumbing]
// The decompositions only need metadata changes: add or drop a size-1 dim,
// broadcast, permute, merge runs of dims into one and split them again. Each
// helper is a dispatched view op (unsqueeze, expand, permute, view, reshape), so
// transforms see every step of a decomposition; the helpers only name the
// linalg-specific shapes.

#include <optional>
#include <vector>

#include "tensor/array_ref.h"
#include "tensor/small_vector.h"
#include "tensor/tensor.h"

namespace strata::linalg {

// A size-1 dim inserted at `dim` (0 <= dim <= rank), or removed (its size must be 1).
Tensor unsqueeze_view(const Tensor& t, int64_t dim);
Tensor squeeze_view(const Tensor& t, int64_t dim);
// t broadcast to `sizes` (right-aligned; sizes must be a valid broadcast of t).
Tensor expand_view(const Tensor& t, IntArrayRef sizes);
// Dim i of the result is dim dims[i] of t.
Tensor permute_view(const Tensor& t, IntArrayRef dims);

// Merges consecutive runs of dims: run g spans group_lengths[g] dims of t, in
// order, and becomes one dim (a run of length 0 becomes a new dim of size 1). The
// result is a view of t when its strides allow it, else of a contiguous copy.
Tensor fold_dims(const Tensor& t, IntArrayRef group_lengths);
// The view alone: nullopt when the strides do not allow it.
std::optional<Tensor> try_fold_dims(const Tensor& t, IntArrayRef group_lengths);
// The inverse: dim d of t becomes the dims group_sizes[d] (whose product is its
// size; an empty group drops a dim of size 1). Always a view.
Tensor split_dims(const Tensor& t, const std::vector<DimVector>& group_sizes);

// A new contiguous tensor holding t's values (never t itself).
Tensor contiguous_copy(const Tensor& t);

}  // namespace strata::linalg
