#pragma once

// Indexing and joins on CUDA, with the CPU kernels' contracts (kernels/cpu/indexing.h,
// kernels/cpu/cat.h). Every tensor argument must be on the output's device (the
// error names both devices otherwise). Index values are checked on the device
// before any is used, and the first bad one is raised as on the CPU: that check
// waits for the device (a few microseconds per call). Plain C++: no CUDA header.

#include <cstdint>

#include "tensor/array_ref.h"

namespace strata {
class Tensor;
class Scalar;
}  // namespace strata

namespace strata::gpu {

void check_index_range(const Tensor& index, int64_t size, int64_t dim, const char* op);
void index_select_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
void gather_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
// Floating sums through atomics: the order of the additions, and so the last bits
// of a sum of many values, may differ from the CPU's.
void scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
void index_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha);
// index and index_put (cpu::take_blocks and cpu::put_blocks) with the blocks'
// element offsets in a device Int64 tensor. Parallel writes to one block have no
// order, so without accumulate the caller keeps each block's last writer and
// marks the others' offsets -1 (skipped).
void take_blocks_kernel(const Tensor& out, const Tensor& src, const Tensor& offsets,
                        int64_t block);
void put_blocks_kernel(const Tensor& target, const Tensor& values, const Tensor& offsets,
                       int64_t block, bool accumulate);
void masked_fill_kernel(const Tensor& out, const Tensor& self, const Tensor& mask,
                        const Scalar& value);
// out [k, dim] = rows of weight [num_rows, dim] picked by indices (k values); contiguous.
void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices);
void cat_kernel(const Tensor& out, ArrayRef<Tensor> inputs, int64_t dim);

}  // namespace strata::gpu
