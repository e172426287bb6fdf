#pragma once

// Joins (ops/shape_joins.cpp), stop_gradient (ops/shape_views.cpp) and the
// scatter forms of views (ops/shape_scatter.cpp); the view and split ops are
// Tensor methods.

#include <optional>

#include "tensor/array_ref.h"
#include "tensor/tensor.h"

namespace strata {

Tensor cat(ArrayRef<Tensor> tensors, int64_t dim = 0);
Tensor stack(ArrayRef<Tensor> tensors, int64_t dim = 0);
// t's values as a constant to every grad and jvp level: a view of t (in-place
// writes to either show in both) through which no gradient or tangent flows.
Tensor stop_gradient(const Tensor& t);

// A copy of self whose region self.select(dim, index) (resp. .slice(...),
// .diagonal(...)) holds src, which must have that region's shape and self's
// dtype (ops/shape_scatter.cpp): a write through a view, out of place.
Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index);
Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim = 0,
                     std::optional<int64_t> start = std::nullopt,
                     std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Tensor diagonal_scatter(const Tensor& self, const Tensor& src, int64_t offset = 0,
                        int64_t dim1 = 0, int64_t dim2 = 1);
// A copy of self, laid out as self over memory of its own, whose locations that
// self.as_strided(size, stride, storage_offset) reads hold src: the write
// through that view, out of place (ops/shape_strided.cpp). The region's
// elements must not share a location.
Tensor as_strided_scatter(const Tensor& self, const Tensor& src, IntArrayRef size,
                          IntArrayRef stride, std::optional<int64_t> storage_offset = std::nullopt);

}  // namespace strata
