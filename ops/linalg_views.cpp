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
// steps exactly over the dims inside it (size-1 dims never step).
bool runs_are_strided(const Tensor& t, IntArrayRef group_lengths) {
  if (t.numel() == 0) return true;
  int64_t first = 0;
  for (int64_t length : group_lengths) {
    int64_t span = 0;  // stride * size of the dims seen so far, 0 before the first
    for (int64_t d = first + length - 1; d >= first; --d) {
      const int64_t size = t.sizes()[d];
      if (size == 1) continue;
      if (span != 0 && t.strides()[d] != span) return false;
      span = t.strides()[d] * size;
    }
    first += length;
  }
  return true;
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

}  // namespace strata::linalg
