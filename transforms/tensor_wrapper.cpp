#include "transforms/tensor_wrapper.h"

#include "transforms/grad/node.h"

namespace strata {

TensorWrapper::TensorWrapper(Tensor value, int64_t level)
    : TensorImpl(DispatchKeySet(autograd_key_for_backend(backend_key(value.device().type))),
                 value.dtype(), value.device()),
      value_(std::move(value)),
      level_(level) {
  refresh_metadata();
}

TensorWrapper::~TensorWrapper() = default;

void TensorWrapper::refresh_metadata() {
  set_sizes_and_strides(value_.sizes(), value_.strides(), value_.storage_offset());
  set_wrapped_number(value_.impl()->is_wrapped_number());
}

Tensor wrap_at_level(Tensor value, int64_t level) {
  return Tensor(IntrusivePtr<TensorImpl>(new TensorWrapper(std::move(value), level)));
}

}  // namespace strata
