#pragma once

#include <cstdint>

namespace strata {
class Tensor;
class Scalar;
}  // namespace strata

namespace strata::cpu {

// The op files check shapes and dtypes; these kernels index with Int64 `index`
// tensors and take `dim` already wrapped. A 0-dim tensor counts as one element
// along dim 0. Gathers check each index as they read it; scatters write into
// existing data, so check_index_range must have passed first.

// Throws naming the op, the dim and the offending value unless every value of
// index lies in [0, size).
void check_index_range(const Tensor& index, int64_t size, int64_t dim, const char* op);

// out[..., i, ...] = self[..., index[i], ...] along dim; index is 0-dim or 1-D.
void index_select_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
// out[p] = self[p with its dim coordinate replaced by index[p]]; out has index's shape.
void gather_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
// self[p with its dim coordinate replaced by index[p]] += src[p], p over index's shape.
void scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// self[..., index[i], ...] += alpha * source[..., i, ...] along dim.
void index_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha);
// out = mask ? value : self, mask (Bool) and self broadcast to out's shape; out may be self.
void masked_fill_kernel(const Tensor& out, const Tensor& self, const Tensor& mask,
                        const Scalar& value);

}  // namespace strata::cpu
