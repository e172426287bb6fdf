// See Note [Linalg views before ops/shape.cpp] in ops/linalg_views.h.
#include "ops/linalg_views.h"

#include "ops/ops.h"

namespace strata::linalg {
namespace {

Tensor make_view(const Tensor& t, IntArrayRef sizes, IntArrayRef strides) {
  return Tensor(make_intrusive<TensorImpl>(t.impl()->storage(), t.dtype(), sizes, strides,
                                           t.storage_offset()));
}

}  // namespace

Tensor unsqueeze_view(const Tensor& t, int64_t dim) {
  DimVector sizes(t.sizes());
  DimVector strides(t.strides());
  // Any stride serves a size-1 dim; this one keeps a contiguous tensor contiguous.
  const int64_t stride = dim < t.dim() ? sizes[dim] * strides[dim] : 1;
  sizes.insert(static_cast<size_t>(dim), 1);
  strides.insert(static_cast<size_t>(dim), stride);
  return make_view(t, sizes, strides);
}

Tensor squeeze_view(const Tensor& t, int64_t dim) {
  DimVector sizes(t.sizes());
  DimVector strides(t.strides());
  sizes.erase(static_cast<size_t>(dim));
  strides.erase(static_cast<size_t>(dim));
  return make_view(t, sizes, strides);
}

Tensor expand_view(const Tensor& t, IntArrayRef sizes) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const int64_t offset = rank - t.dim();
  DimVector strides(static_cast<size_t>(rank), 0);
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == sizes[d + offset]) strides[d + offset] = t.strides()[d];
  }
  return make_view(t, sizes, strides);
}

Tensor permute_view(const Tensor& t, IntArrayRef dims) {
  DimVector sizes;
  DimVector strides;
  for (int64_t d : dims) {
    sizes.push_back(t.sizes()[d]);
    strides.push_back(t.strides()[d]);
  }
  return make_view(t, sizes, strides);
}

std::optional<Tensor> try_fold_dims(const Tensor& t, IntArrayRef group_lengths) {
  DimVector sizes;
  DimVector strides;
  int64_t first = 0;
  for (int64_t length : group_lengths) {
    // Walk the run from its innermost dim out: each dim of size > 1 must step
    // exactly over the dims inside it. Size-1 dims never step and are skipped.
    int64_t size = 1;
    int64_t stride = 1;
    int64_t next_stride = 0;
    for (int64_t d = first + length - 1; d >= first; --d) {
      const int64_t dim_size = t.sizes()[d];
      if (dim_size == 1) continue;
      if (size == 1) {
        stride = t.strides()[d];
      } else if (t.strides()[d] != next_stride && t.numel() != 0) {
        return std::nullopt;
      }
      size *= dim_size;
      next_stride = t.strides()[d] * dim_size;
    }
    sizes.push_back(size);
    strides.push_back(stride);
    first += length;
  }
  // An empty tensor has no elements to step over: any strides describe it.
  if (t.numel() == 0) return make_view(t, sizes, contiguous_strides(sizes));
  return make_view(t, sizes, strides);
}

Tensor fold_dims(const Tensor& t, IntArrayRef group_lengths) {
  if (std::optional<Tensor> view = try_fold_dims(t, group_lengths)) return *view;
  return *try_fold_dims(contiguous_copy(t), group_lengths);
}

Tensor split_dims(const Tensor& t, const std::vector<DimVector>& group_sizes) {
  DimVector sizes;
  DimVector strides;
  for (size_t d = 0; d < group_sizes.size(); ++d) {
    const DimVector& group = group_sizes[d];
    int64_t stride = t.strides()[d];
    const size_t first = sizes.size();
    sizes.resize(first + group.size());
    strides.resize(first + group.size());
    for (size_t j = group.size(); j-- > 0;) {
      sizes[first + j] = group[j];
      strides[first + j] = stride;
      stride *= group[j];
    }
  }
  return make_view(t, sizes, strides);
}

Tensor contiguous_copy(const Tensor& t) {
  Tensor out = empty(t.sizes(), t.dtype(), t.device());
  out.copy_(t);
  return out;
}

}  // namespace strata::linalg
