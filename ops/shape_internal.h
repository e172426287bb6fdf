#pragma once

// Helpers shared by the shape operator files (shape_views.cpp, shape_slicing.cpp,
// shape_joins.cpp); not part of the public API.

#include <optional>

#include "tensor/small_vector.h"
#include "tensor/tensor.h"

namespace strata::shape_detail {

// A tensor over self's storage with the given geometry (no copy). Throws for a
// TensorImpl without storage of its own, which has nothing to view.
Tensor make_view(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset,
                 const char* op);

// The position at which a new dim goes into a tensor of `rank` dims: dim in
// [-rank - 1, rank], made non-negative.
int64_t wrap_insert_dim(int64_t dim, int64_t rank, const char* op);

// `shape` with its -1 (at most one) replaced so the sizes multiply to `numel`;
// errors name `shape`, `input_sizes` and `numel`.
DimVector infer_size(IntArrayRef shape, int64_t numel, IntArrayRef input_sizes, const char* op);

// The strides that show a tensor of (sizes, strides) with `new_sizes` without
// copying, or nothing when no such strides exist (see Note [Viewing strided memory]).
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides,
                                      IntArrayRef new_sizes);

}  // namespace strata::shape_detail
