// See Note [Linalg shape plumbing] in ops/linalg_views.h.
#include "ops/linalg_views.h"

#include "ops/ops.h"

namespace strata::linalg {
namespace {

// The sizes of t with each run of group_lengths[g] dims merged into one.
DimVector folded_sizes(const Tensor& t, IntArrayRef group_lengths) {
  DimVector sizes;
  int64_t first = 0;
  for (int64_t length : group_lengths) {
    int64_t size = 1;
    for (int64_t d = first; d < first + length; ++d) size *= t.sizes()[d];
    sizes.push_back(size);
    first += length;
  }
  return sizes;
}

// Whether every run can be one strided dim: within a run, each dim of size > 1
// steps exactly over the dims inside it (size-1 dims never step). An expanded
// (stride-0) inner dim spans nothing, so only another stride-0 dim can join it.
bool runs_are_strided(const Tensor& t, IntArrayRef group_lengths) {
  if (t.numel() == 0) return true;
  int64_t first = 0;
  for (int64_t length : group_lengths) {
    std::optional<int64_t> span;  // stride * size of the inner dims of size > 1 seen so far
    for (int64_t d = first + length - 1; d >= first; --d) {
      const int64_t size = t.sizes()[d];
      if (size == 1) continue;
      if (span && t.strides()[d] != *span) return false;
      span = t.strides()[d] * size;
    }
    first += length;
  }
  return true;
}

// One group per dim of a tensor of rank `rank`, except dims first and first + 1,
// which form one.
DimVector pair_groups(int64_t rank, int64_t first) {
  DimVector groups(static_cast<size_t>(rank - 1), 1);
  groups[static_cast<size_t>(first)] = 2;
  return groups;
}

}  // namespace

Tensor unsqueeze_view(const Tensor& t, int64_t dim) { return t.unsqueeze(dim); }

Tensor squeeze_view(const Tensor& t, int64_t dim) { return t.squeeze(dim); }

Tensor expand_view(const Tensor& t, IntArrayRef sizes) { return t.expand(sizes); }

Tensor permute_view(const Tensor& t, IntArrayRef dims) { return t.permute(dims); }

std::optional<Tensor> try_fold_dims(const Tensor& t, IntArrayRef group_lengths) {
  if (!runs_are_strided(t, group_lengths)) return std::nullopt;
  return t.view(folded_sizes(t, group_lengths));
}

Tensor fold_dims(const Tensor& t, IntArrayRef group_lengths) {
  return t.reshape(folded_sizes(t, group_lengths));
}

Tensor split_dims(const Tensor& t, const std::vector<DimVector>& group_sizes) {
  DimVector sizes;
  for (const DimVector& group : group_sizes) {
    for (int64_t s : group) sizes.push_back(s);
  }
  return t.view(sizes);
}

Tensor contiguous_copy(const Tensor& t) { return t.clone(); }

BatchFold fold_batch(const Tensor& value, int64_t bdim, int64_t dim) {
  const int64_t batch_size = value.sizes()[bdim];
  const int64_t at = dim < bdim ? dim : dim + 1;  // the sample's dim in value
  const int64_t sample_size = value.sizes()[at];
  if (bdim == at - 1 || bdim == at + 1) {
    if (std::optional<Tensor> merged = try_fold_dims(value, pair_groups(value.dim(), dim))) {
      return {*merged, dim, bdim < at, batch_size, sample_size};
    }
  }
  const Tensor batch_before = value.movedim(bdim, dim);
  return {fold_dims(batch_before, pair_groups(value.dim(), dim)), dim, true, batch_size,
          sample_size};
}

std::pair<Tensor, int64_t> unfold_batch(const Tensor& result, int64_t dim, const BatchFold& fold) {
  DimVector sizes;
  for (int64_t d = 0; d < result.dim(); ++d) {
    if (d != dim) {
      sizes.push_back(result.sizes()[d]);
    } else if (fold.batch_major) {
      sizes.push_back(fold.batch_size);
      sizes.push_back(fold.sample_size);
    } else {
      sizes.push_back(fold.sample_size);
      sizes.push_back(fold.batch_size);
    }
  }
  return {result.view(sizes), fold.batch_major ? dim : dim + 1};
}

}  // namespace strata::linalg
