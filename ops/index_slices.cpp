// Advanced indexing past the leading dims (ops/index_put_internal.h): an undefined
// entry of the indices stands for a full slice (`:` of x[:, idx]), as None does in
// PyTorch's index(Tensor?[]). The ops in ops/index_put.cpp index only leading
// dims; this rewrites a list with slices into that form, so their kernels,
// derivatives and batching rules serve every layout.
//
// PyTorch's rule for where the indexed dims go: when the index tensors are
// adjacent, their broadcast positions replace the dims they index in place
// (x[:, i, j] of x [A, B, C, D] is [A, P..., D]); when a slice separates them,
// the positions go first and the other dims follow in order (x[i, :, j] is
// [P..., B, D]). Both are the leading form once every sliced dim before the
// last index is indexed too, by an arange with a dim of its own in the
// positions: before the indices' dims when adjacent, after them otherwise.
#include <algorithm>

#include "ops/creation.h"
#include "ops/index_put_internal.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor_impl.h"

namespace strata::index_put_detail {
namespace {

// The dims one entry covers: a slice or an Int64 index one, a Bool mask its own.
int64_t dims_covered(const Tensor& index) {
  return index.defined() && index.dtype() == kBool ? std::max<int64_t>(index.dim(), 1) : 1;
}

// t's sizes with `before` leading and `after` trailing size-1 dims.
DimVector padded(const Tensor& t, int64_t before, int64_t after) {
  DimVector sizes(static_cast<size_t>(before), 1);
  for (int64_t s : t.sizes()) sizes.push_back(s);
  sizes.resize(sizes.size() + static_cast<size_t>(after), 1);
  return sizes;
}

}  // namespace

std::optional<Indices> leading_form(const Tensor& self, const Indices& indices, const char* op) {
  // The last index tensor, and whether a slice comes before it.
  size_t end = 0;
  bool sliced = false;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k].defined()) end = k + 1;
  }
  for (size_t k = 0; k < end; ++k) sliced |= !indices[k].defined();
  if (end == indices.size() && !sliced) return std::nullopt;

  int64_t covered = 0;
  size_t tensors = 0;
  for (const Tensor& index : indices) {
    covered += dims_covered(index);
    tensors += index.defined() ? 1 : 0;
  }
  STRATA_CHECK(covered <= self.dim(), op, "too many indices: ", indices.size(), " entries (",
               tensors, " index tensors, ", indices.size() - tensors, " slices) cover ", covered,
               " dims of self of shape ", shape_string(self.sizes()));
  if (!sliced) return Indices(indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(end));

  // The index tensors' broadcast rank (a mask's positions are 1-D), whether a
  // slice separates them, and the sliced dims before the last of them.
  size_t first = 0;
  while (!indices[first].defined()) ++first;
  bool adjacent = true;
  int64_t rank = 0;
  int64_t slices = 0;
  DimVector positions;
  for (size_t k = 0; k < end; ++k) {
    const Tensor& index = indices[k];
    if (!index.defined()) {
      ++slices;
      adjacent &= k < first;
      continue;
    }
    const bool mask = index.dtype() == kBool;
    rank = std::max<int64_t>(rank, mask ? 1 : index.dim());
    if (index.dtype() == kInt64) positions = broadcast_shapes(positions, index.sizes(), op);
  }
  // The positions' dims, and each sliced dim's, in the rewritten positions.
  const int64_t total = rank + slices;
  const int64_t at = adjacent ? slices : 0;
  int64_t next_slice = adjacent ? 0 : rank;

  Indices out;
  int64_t dim = 0;
  for (size_t k = 0; k < end; ++k) {
    const Tensor& index = indices[k];
    if (!index.defined()) {
      DimVector column(static_cast<size_t>(total), 1);
      column[static_cast<size_t>(next_slice++)] = self.sizes()[dim];
      out.push_back(arange(self.sizes()[dim], kInt64, self.device()).view(column));
      ++dim;
      continue;
    }
    dim += dims_covered(index);
    // A mask stays one when its positions are the last dims; otherwise its
    // positions are read (a data-dependent count) and padded as Int64 indices.
    if (index.dtype() == kBool && at + rank == total) {
      out.push_back(index);
      continue;
    }
    const int64_t after = total - at - rank;
    if (index.dtype() != kBool) {
      out.push_back(index.reshape(padded(index, at + rank - index.dim(), after)));
      continue;
    }
    const int64_t from = dim - dims_covered(index);
    for (int64_t d = 0; d < index.dim(); ++d) {
      STRATA_CHECK(index.sizes()[d] == self.sizes()[from + d], op, "the Bool index of shape ",
                   shape_string(index.sizes()), " does not match self of shape ",
                   shape_string(self.sizes()), " at dims ", from, "...");
    }
    // The positions are plain data, not a transform's: their padded form is
    // made here rather than by a view op a transform would record.
    for (const Tensor& part : true_positions(index, op)) {
      const DimVector sizes = padded(part, at + rank - 1, after);
      out.emplace_back(make_intrusive<TensorImpl>(part.impl()->storage(), kInt64, sizes,
                                                  contiguous_strides(sizes), 0));
    }
  }
  return out;
}

}  // namespace strata::index_put_detail
