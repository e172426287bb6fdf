#pragma once

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "tensor/array_ref.h"
#include "tensor/intrusive_ptr.h"
#include "tensor/scalar.h"
#include "tensor/tensor_impl.h"

namespace strata {

// A cheap ref-counted handle to a TensorImpl. Copying a Tensor shares the data;
// `clone()` copies it. Methods that compute (add, mul, fill_, ...) call operators
// through the dispatcher; they are defined with their operator under ops/.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const IntrusivePtr<TensorImpl>& impl_ptr() const { return impl_; }

  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  // Negative dims count from the end; out-of-range dims throw.
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  ScalarType dtype() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  DispatchKeySet key_set() const { return impl_->key_set(); }
  uint32_t version() const { return impl_->version(); }

  void* data_ptr() const { return impl_->data_ptr(); }
  // Typed pointer to element 0; throws if T does not match the dtype.
  template <class T>
  T* data_ptr() const;

  // The value of a one-element tensor, converted to T.
  template <class T>
  T item() const;
  // All values in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  // Operators (see ops/): out-of-place return a new tensor; in-place (trailing _)
  // write into *this, bump its version and return it.
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& fill_(const Scalar& value) const;
  const Tensor& zero_() const;
  const Tensor& copy_(const Tensor& src) const;

 private:
  IntrusivePtr<TensorImpl> impl_;
};

// Prints like NumPy: nested brackets, aligned columns, "..." past 1000 elements.
std::ostream& operator<<(std::ostream& out, const Tensor& t);

// "[2, 3]" for messages.
std::string shape_string(IntArrayRef sizes);

// Wraps a negative dim and checks it against rank; `op` names the caller in errors.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);

}  // namespace strata
