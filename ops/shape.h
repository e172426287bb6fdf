#pragma once

// Joins (ops/shape_joins.cpp) and stop_gradient (ops/shape_views.cpp); the view
// and split ops are Tensor methods.

#include "tensor/array_ref.h"
#include "tensor/tensor.h"

namespace strata {

Tensor cat(ArrayRef<Tensor> tensors, int64_t dim = 0);
Tensor stack(ArrayRef<Tensor> tensors, int64_t dim = 0);
// t's values as a constant to every grad and jvp level: a view of t (in-place
// writes to either show in both) through which no gradient or tangent flows.
Tensor stop_gradient(const Tensor& t);

}  // namespace strata
