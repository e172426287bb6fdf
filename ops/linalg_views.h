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
#include <utility>
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

// Note [Folding the vmap batch into a dim]
// A batching rule computes a product for every sample at once by merging the vmap
// batch into a dim the kernel already runs over (the rows or columns of a GEMM whose
// other operand every sample shares), so the whole batch is one kernel call. The
// merged dim runs over the batch outside the sample's dim (batch-major) or inside it.
struct BatchFold {
  Tensor value;      // the batch merged into dim `dim`
  int64_t dim;       // where the merged dim is
  bool batch_major;  // merged index b * sample_size + i, else i * batch_size + b
  int64_t batch_size;
  int64_t sample_size;  // the size of the sample's dim
};
// Merges the batch of `value` (at `bdim`) into dim `dim` of a sample: as it lies when
// the batch is next to that dim and the strides allow a view; else the batch moves
// in front of that dim (batch-major), a view where the strides allow, else a copy.
BatchFold fold_batch(const Tensor& value, int64_t bdim, int64_t dim);
// Splits the batch out of dim `dim` of a result computed from a fold, whose size is
// that of the fold's merged dim (a view): the result's values and their batch dim.
std::pair<Tensor, int64_t> unfold_batch(const Tensor& result, int64_t dim, const BatchFold& fold);

}  // namespace strata::linalg
