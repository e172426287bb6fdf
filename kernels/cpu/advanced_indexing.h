#pragma once

// The data loops of index, index_put and masked_select (ops/index_put.cpp): the
// indexed dims of a contiguous tensor pick blocks of `block` contiguous elements
// (the dims after them), one per index position.

#include <cstdint>
#include <vector>

#include "tensor/array_ref.h"

namespace strata {
class Tensor;
}

namespace strata::cpu {

// The element offset of each position's block: indices are contiguous Int64
// tensors of one shape, index k selecting along dim k of a contiguous tensor of
// `sizes`. Negative indices count from the end; others out of range throw naming
// `op`, the dim and its size.
std::vector<int64_t> block_offsets(const std::vector<Tensor>& indices, IntArrayRef sizes,
                                   const char* op);

// out (contiguous) = the blocks of src (contiguous) at `offsets`, one after another.
void take_blocks(const Tensor& out, const Tensor& src, const std::vector<int64_t>& offsets,
                 int64_t block);

// The blocks of target (contiguous) at `offsets` = (or, accumulate: += ) the
// consecutive blocks of values (contiguous, target's dtype), in order; Bool
// accumulates with or.
void put_blocks(const Tensor& target, const Tensor& values, const std::vector<int64_t>& offsets,
                int64_t block, bool accumulate);

}  // namespace strata::cpu
