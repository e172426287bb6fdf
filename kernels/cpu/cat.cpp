#include "kernels/cpu/cat.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/parallel.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// An input that is one contiguous block per outer index: `length` bytes at
// `source + o * length` go to `offset + o * out_row` bytes into the output.
struct Block {
  const char* source;
  int64_t offset;
  int64_t length;
};

// The part [start, start + length) of out along dim, as a tensor to copy into.
Tensor slice_of(const Tensor& out, int64_t dim, int64_t start, int64_t length) {
  DimVector sizes(out.sizes());
  sizes[dim] = length;
  return Tensor(make_intrusive<TensorImpl>(out.impl()->storage(), out.dtype(), sizes, out.strides(),
                                           out.storage_offset() + start * out.strides()[dim]));
}

}  // namespace

void cat_kernel(const Tensor& out, ArrayRef<Tensor> inputs, int64_t dim) {
  if (out.numel() == 0) return;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out.sizes()[d];
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.sizes()[d];
  const int64_t esize = element_size(out.dtype());
  const int64_t out_row = out.sizes()[dim] * inner * esize;

  // Inputs laid out like out go as one memcpy per outer index; the others (strided,
  // or of another dtype) through the elementwise copy, which converts.
  std::vector<Block> blocks;
  int64_t start = 0;
  for (const Tensor& input : inputs) {
    if (input.numel() == 0) continue;
    const int64_t length = input.sizes()[dim];
    if (out.is_contiguous() && input.is_contiguous() && input.dtype() == out.dtype()) {
      blocks.push_back({static_cast<const char*>(input.data_ptr()), start * inner * esize,
                        length * inner * esize});
    } else {
      copy_kernel(slice_of(out, dim, start, length), input);
    }
    start += length;
  }
  if (blocks.empty()) return;
  char* base = static_cast<char*>(out.data_ptr());
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain * esize / out_row);
  parallel_for(0, outer, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      for (const Block& b : blocks) {
        std::memcpy(base + o * out_row + b.offset, b.source + o * b.length,
                    static_cast<size_t>(b.length));
      }
    }
  });
}

}  // namespace strata::cpu
