#pragma once

// Joins (ops/shape_joins.cpp); the view and split ops are Tensor methods.

#include "tensor/array_ref.h"
#include "tensor/tensor.h"

namespace strata {

Tensor cat(ArrayRef<Tensor> tensors, int64_t dim = 0);
Tensor stack(ArrayRef<Tensor> tensors, int64_t dim = 0);

}  // namespace strata
