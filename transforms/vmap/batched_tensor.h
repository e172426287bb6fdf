#pragma once

#include <cstdint>
#include <optional>

#include "tensor/tensor.h"

namespace strata::batching {

// A tensor seen at one vmap level: `value` holds every sample of the batch, with
// the batch along `bdim`; the tensor's own (logical) sizes and strides are the
// value's without that dim, so a function written for one sample sees one
// sample. It has no storage: its values are read outside the transform.
class BatchedTensorImpl final : public TensorImpl {
 public:
  BatchedTensorImpl(Tensor value, int64_t bdim, int64_t level);

  const Tensor& value() const { return value_; }
  int64_t bdim() const { return bdim_; }
  int64_t level() const { return level_; }
  int64_t batch_size() const { return value_.sizes()[static_cast<size_t>(bdim_)]; }

  // Recomputes the logical sizes from the value (after an in-place op on it).
  void refresh_metadata();

  const char* impl_name() const override { return "BatchedTensorImpl"; }
  const StorageImpl* underlying_storage() const override {
    return value_.impl()->underlying_storage();
  }

 private:
  Tensor value_;
  int64_t bdim_;
  int64_t level_;
};

// Only batched tensors carry the Batched key, so the test is a bit test.
inline BatchedTensorImpl* as_batched(const Tensor& t) {
  if (!t.defined() || !t.key_set().has(DispatchKey::Batched)) return nullptr;
  return static_cast<BatchedTensorImpl*>(t.impl());
}

inline BatchedTensorImpl* batched_at_level(const Tensor& t, int64_t level) {
  BatchedTensorImpl* b = as_batched(t);
  return b != nullptr && b->level() == level ? b : nullptr;
}

// `value` with its batch along `bdim` as a tensor of `level`; with no bdim,
// `value` itself (an unbatched value is the same for every sample).
Tensor make_batched(Tensor value, std::optional<int64_t> bdim, int64_t level);

}  // namespace strata::batching
