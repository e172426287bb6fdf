#pragma once

#include <dlpack/dlpack.h>

#include "tensor/tensor.h"

namespace strata {

// Note [DLPack exchange]
// to_dlpack(t) describes t's memory to another library without copying: the
// DLManagedTensor holds a reference to t (so its storage lives until the other
// side calls the deleter) and t's sizes and strides. from_dlpack(m) makes a
// tensor over m's memory, again without copying, with m's strides; it takes
// ownership of m and calls m's deleter once, when the last tensor using the
// memory dies. A DLManagedTensor is consumed once: passing one that a live
// tensor already owns is an error. When from_dlpack throws it has not taken
// ownership. CPU and CUDA tensors (pinned host memory comes in as CPU) of
// Bool, Int64, Float32 and Float64.
DLManagedTensor* to_dlpack(const Tensor& t);
Tensor from_dlpack(DLManagedTensor* managed);

}  // namespace strata
