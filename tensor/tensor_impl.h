#pragma once

#include <cstdint>

#include "tensor/array_ref.h"
#include "tensor/device.h"
#include "tensor/dispatch_key.h"
#include "tensor/intrusive_ptr.h"
#include "tensor/scalar_type.h"
#include "tensor/small_vector.h"
#include "tensor/storage.h"

namespace strata {

// A strided view of a Storage: sizes, strides (in elements), an offset, a dtype,
// a device and the dispatch keys that select its kernels. One allocation holds all
// of it for tensors of rank <= 5. Subclasses carry transform state (a grad
// wrapper, a batched tensor); they may have no storage of their own.
// The number of elements of a tensor of shape `sizes`, or -1 when it exceeds
// 2^63 - 1 (a shape holding a zero has none, whatever its other sizes).
int64_t checked_numel(IntArrayRef sizes);

class TensorImpl : public RefCounted {
 public:
  // A contiguous tensor over `storage`, whose key set is its backend's key.
  TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes);
  // A view: explicit strides and offset into a shared storage.
  TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides,
             int64_t storage_offset);
  ~TensorImpl() override;

  // One TensorImpl is made per op output: take them from the allocator's
  // per-thread cache instead of malloc (subclasses too; delete is sized).
  static void* operator new(size_t nbytes);
  static void operator delete(void* ptr, size_t nbytes);

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  bool is_contiguous() const { return is_contiguous_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  DispatchKeySet key_set() const { return key_set_; }

  bool has_storage() const { return static_cast<bool>(storage_); }
  const Storage& storage() const { return storage_; }
  // Address of element 0 (after the offset); requires storage.
  void* data_ptr() const {
    if (__builtin_expect(!storage_, 0)) throw_no_storage();
    return static_cast<char*>(storage_->data()) + storage_offset_ * element_size(dtype_);
  }

  // Shared by views of one storage; in-place ops bump it. A tensor without
  // storage has the version its subclass gives (a functionalize level's tensor
  // counts the writes to its root and the root's views), 0 by default.
  uint32_t version() const { return storage_ ? storage_->version() : storageless_version(); }
  void bump_version();

  // The tensor whose storage holds this one's values: itself, or for a wrapper
  // that may be read (a grad level's TensorWrapper), what it wraps. Subclasses
  // whose values cannot be read as a whole (a batched tensor) keep this default
  // and have no storage, so reading them fails with a clear message.
  virtual const TensorImpl* value_source() const { return this; }
  // The storage that holds this tensor's memory, seen through every transform
  // wrapper (a grad wrapper, a batched tensor): tensors that share it alias.
  virtual const StorageImpl* underlying_storage() const { return storage_.get(); }

  virtual uint32_t storageless_version() const { return 0; }

  // Changes shape metadata in place (views, resize of a fresh output).
  void set_sizes_contiguous(IntArrayRef sizes);
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);

  // A 0-dim tensor made from a C++ number in `x * 2.0`: it promotes like a Python
  // number, below tensors of any rank (see result_type).
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool wrapped) { is_wrapped_number_ = wrapped; }

  // For error messages: "TensorImpl", "BatchedTensorImpl", ...
  virtual const char* impl_name() const { return "TensorImpl"; }

 protected:
  // For subclasses that define their own keys and may have no storage.
  TensorImpl(DispatchKeySet keys, ScalarType dtype, Device device);
  void set_key_set(DispatchKeySet keys) { key_set_ = keys; }
  // Takes other's shape, strides, offset and the facts derived from them, for a
  // wrapper that mirrors the tensor it wraps (nothing to recompute).
  void copy_shape_from(const TensorImpl& other);

 private:
  void refresh_numel_and_contiguity();
  [[noreturn]] void throw_no_storage() const;

  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  DispatchKeySet key_set_;
  ScalarType dtype_;
  Device device_;
  bool is_contiguous_ = true;
  bool is_wrapped_number_ = false;
};

// Row-major strides for sizes.
DimVector contiguous_strides(IntArrayRef sizes);

DispatchKey backend_key(DeviceType type);

// A tensor whose values the CPU can read: t itself when its memory is
// host-accessible, else a CPU tensor (same sizes and strides) over a host copy of
// the bytes t's view spans. Printing and to_vector read device tensors through it.
IntrusivePtr<TensorImpl> host_readable(const TensorImpl& t);

}  // namespace strata
