#pragma once

#include <cstdint>

#include "tensor/array_ref.h"

namespace strata {
class Tensor;
}  // namespace strata

namespace strata::cpu {

// Copies `inputs` one after another along `dim` into `out`, converting dtypes.
// Inputs with no elements are skipped; the others match out except along dim.
void cat_kernel(const Tensor& out, ArrayRef<Tensor> inputs, int64_t dim);

}  // namespace strata::cpu
