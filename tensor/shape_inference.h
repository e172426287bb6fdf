#pragma once

#include "tensor/array_ref.h"
#include "tensor/scalar.h"
#include "tensor/device.h"
#include "tensor/scalar_type.h"
#include "tensor/small_vector.h"

namespace strata {

class Tensor;

// NumPy broadcasting of two shapes; `op` names the caller in the error.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

// The dtype an elementwise op computes in, as in PyTorch. Operands rank in three
// classes: tensors with dims, 0-dim tensors, wrapped numbers. The highest class
// present decides, unless a lower class holds a higher category (bool < integer <
// floating): then a 0-dim tensor's own dtype, or a wrapped number's default dtype
// (Int64, or Float32 for a floating number), wins.
ScalarType result_type(ArrayRef<Tensor> operands);
ScalarType result_type(const Tensor& a, const Tensor& b);

// The 0-dim wrapped-number tensor for a C++ number: Float64, Int64 or Bool.
Tensor wrapped_scalar_tensor(const Scalar& value);

// A new contiguous tensor with uninitialized values; checks the sizes.
Tensor make_empty_tensor(IntArrayRef sizes, ScalarType dtype, Device device, const char* op);

}  // namespace strata
