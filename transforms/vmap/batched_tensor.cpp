#include "transforms/vmap/batched_tensor.h"

#include "tensor/small_vector.h"

namespace strata::batching {

BatchedTensorImpl::BatchedTensorImpl(Tensor value, int64_t bdim, int64_t level)
    : TensorImpl(DispatchKeySet(DispatchKey::Batched), value.dtype(), value.device()),
      value_(std::move(value)),
      bdim_(bdim),
      level_(level) {
  refresh_metadata();
}

void BatchedTensorImpl::refresh_metadata() {
  DimVector sizes;
  DimVector strides;
  for (int64_t d = 0; d < value_.dim(); ++d) {
    if (d == bdim_) continue;
    sizes.push_back(value_.sizes()[static_cast<size_t>(d)]);
    strides.push_back(value_.strides()[static_cast<size_t>(d)]);
  }
  set_sizes_and_strides(sizes, strides, 0);
}

Tensor make_batched(Tensor value, std::optional<int64_t> bdim, int64_t level) {
  if (!bdim || !value.defined()) return value;
  return Tensor(
      IntrusivePtr<TensorImpl>::adopt_new(new BatchedTensorImpl(std::move(value), *bdim, level)));
}

}  // namespace strata::batching
