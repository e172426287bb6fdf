#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}

namespace strata::cpu {

// out [rows, out_features] = input [rows, in_features] @ weight[out_features,
// in_features]^T (+ bias [out_features]); contiguous tensors of one floating dtype.
// `bias` may be null.
void linear_kernel(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor* bias,
                   int64_t rows);

}  // namespace strata::cpu
