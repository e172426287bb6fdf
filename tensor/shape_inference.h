#pragma once

#include "tensor/array_ref.h"
#include "tensor/device.h"
#include "tensor/scalar_type.h"
#include "tensor/small_vector.h"

namespace strata {

class Tensor;

// NumPy broadcasting of two shapes; `op` names the caller in the error.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

// The dtype a binary op computes in, as in PyTorch: tensors with dims decide,
// unless a 0-dim tensor is of a higher category (bool < integer < floating),
// in which case it decides.
ScalarType result_type(const Tensor& a, const Tensor& b);

// A new contiguous tensor with uninitialized values; checks the sizes.
Tensor make_empty_tensor(IntArrayRef sizes, ScalarType dtype, Device device, const char* op);

}  // namespace strata
