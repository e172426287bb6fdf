#include "ops/reduction_common.h"

#include <algorithm>
#include <string>

#include "ops/ops.h"
#include "tensor/error.h"

namespace strata::reduction {

Reduction plan_reduction(const Tensor& self, IntArrayRef dims, bool keepdim, ScalarType out_dtype,
                         const char* op) {
  const int64_t rank = self.dim();
  STRATA_CHECK(rank <= cpu::kMaxReductionRank, op, "cannot reduce a tensor of rank ", rank,
               " (at most ", cpu::kMaxReductionRank, " dims)");
  DimMask named = 0;
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, rank, op);
    STRATA_CHECK(!(named >> d & 1), op, "dim ", d, " appears more than once in the dim list ",
                 shape_string(dims));
    named |= DimMask{1} << d;
  }
  Reduction r;
  r.reduced = dims.empty() ? ~DimMask{0} : named;
  r.out_dtype = out_dtype;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = self.sizes()[d];
    if (!(r.reduced >> d & 1)) {
      r.out_sizes.push_back(size);
    } else {
      r.group_numel *= size;
      if (keepdim) r.out_sizes.push_back(1);
    }
  }
  return r;
}

void check_nonempty_groups(const Tensor& self, const Reduction& r, IntArrayRef dims,
                           const char* op) {
  STRATA_CHECK(r.group_numel > 0, op,
               "cannot reduce over zero elements: the reduction has no identity (input of "
               "shape ",
               shape_string(self.sizes()), ", reduced dims ",
               dims.empty() ? std::string("all") : shape_string(dims), ")");
}

void check_floating(const Tensor& self, const char* op) {
  STRATA_CHECK(is_floating_point(self.dtype()), op,
               "expected a floating-point input, got a tensor of dtype ", self.dtype(),
               " and shape ", shape_string(self.sizes()),
               " (convert it first, e.g. x.to(kFloat32))");
}

BatchedReduction plan_batched_reduction(const batching::BatchedArg& x, IntArrayRef dims,
                                        bool keepdim, bool single_dim, const char* op) {
  const int64_t rank = x.logical_dim();
  const int64_t bdim = *x.bdim;
  if (rank == 0) {
    // A 0-dim sample reduces its one value: give it a size-1 dim after the batch.
    DimVector physical;
    for (int64_t d : dims) physical.push_back(batching::batch_first_dim(d, 0, op));
    if (physical.empty()) physical.push_back(1);
    return {x.value.unsqueeze(1), std::move(physical), false, 0, std::nullopt};
  }
  if (dims.empty() && single_dim && rank > 1) {
    const int64_t batch_size = x.value.sizes()[bdim];
    const int64_t sample_numel = batch_size == 0 ? 0 : x.value.numel() / batch_size;
    BatchedReduction r{
        batching::batch_first(x).reshape({batch_size, sample_numel}), {1}, false, 0, std::nullopt};
    if (keepdim) {
      r.out_sizes = DimVector(static_cast<size_t>(rank) + 1, 1);
      (*r.out_sizes)[0] = batch_size;
    }
    return r;
  }
  DimVector physical;
  if (!dims.empty()) {
    for (int64_t d : dims) {
      const int64_t in_sample = batching::batch_first_dim(d, rank, op) - 1;
      physical.push_back(in_sample < bdim ? in_sample : in_sample + 1);
    }
  } else {
    for (int64_t d = 0; d <= rank; ++d) {
      if (d != bdim) physical.push_back(d);
    }
  }
  const int64_t dropped_before_batch = keepdim ? 0
                                               : std::count_if(physical.begin(), physical.end(),
                                                               [&](int64_t d) { return d < bdim; });
  return {x.value, std::move(physical), keepdim, bdim - dropped_before_batch, std::nullopt};
}

Tensor batched_result(Tensor result, const BatchedReduction& r, int64_t level) {
  if (r.out_sizes) result = result.reshape(*r.out_sizes);
  return batching::make_batched(std::move(result), r.out_bdim, level);
}

Folded::Folded(IntArrayRef input_sizes, IntArrayRef dims, bool keepdim) : keepdim_(keepdim) {
  const int64_t rank = static_cast<int64_t>(input_sizes.size());
  // A 0-dim input accepts dim 0 or -1 but has no dim to put back.
  if (rank > 0) {
    for (int64_t d : dims) dims_.push_back(wrap_dim(d, rank, "strata::autograd"));
    if (dims.empty()) {
      for (int64_t d = 0; d < rank; ++d) dims_.push_back(d);
    }
  }
  std::sort(dims_.begin(), dims_.end());
  for (int64_t d : dims_) group_numel_ *= input_sizes[static_cast<size_t>(d)];
}

Tensor Folded::restore(const Tensor& reduced) const {
  if (keepdim_) return reduced;
  Tensor t = reduced;
  for (int64_t d : dims_) t = t.unsqueeze(d);  // ascending, so each d is final
  return t;
}

Tensor tie_weights(const Tensor& x, const Tensor& attained, const Folded& f) {
  Tensor ties = x == f.restore(attained);
  return ties / ties.sum(f.dims(), true);
}

}  // namespace strata::reduction
