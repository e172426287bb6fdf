#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}

namespace strata::cpu {

// out [k, dim] = the rows of weight [num_rows, dim] picked by indices (Int64, k
// values); throws on an index outside [0, num_rows). Tensors contiguous.
void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices);

// Normalizes each of `rows` contiguous rows of `features` values to zero mean and unit
// (biased) variance, then scales by weight and shifts by bias ([features], either may
// be null). Tensors contiguous, of one floating dtype.
void layer_norm_kernel(const Tensor& out, const Tensor& input, const Tensor* weight,
                       const Tensor* bias, int64_t rows, double eps);

// grad_input = the gradient of layer_norm (without its bias) in its input, given
// the gradient of its output: per row, the normalisation's Jacobian (symmetric)
// applied to grad_output * weight (weight [features] or null). Tensors contiguous,
// of one floating dtype, grad_output and input of grad_input's shape.
void layer_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& input, const Tensor* weight, int64_t rows,
                                double eps);

// mask[i] = 0 with probability p, else 1 / (1 - p), drawn from counter first + i of
// the generator with this seed. `mask` is contiguous and floating.
void dropout_mask_kernel(const Tensor& mask, double p, uint64_t seed, uint64_t first);

}  // namespace strata::cpu
