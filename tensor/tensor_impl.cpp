#include "tensor/tensor_impl.h"

#include <algorithm>

#include "tensor/allocator.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata {

DispatchKey backend_key(DeviceType type) {
  return type == DeviceType::CUDA ? DispatchKey::CUDA : DispatchKey::CPU;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    // A shape with a 0 dim has no elements, yet its other dims still multiply
    // into the strides: refuse them past int64 rather than overflow.
    if (i > 0 && __builtin_mul_overflow(running, sizes[i] > 1 ? sizes[i] : 1, &running)) {
      STRATA_FAIL("strata::empty", "a tensor of shape ", shape_string(sizes),
                  " would have strides past 2^63 - 1 (the product of its nonzero dims)");
    }
  }
  return strides;
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes)
    : storage_(std::move(storage)),
      sizes_(sizes),
      strides_(contiguous_strides(sizes)),
      key_set_(backend_key(storage_->device().type)),
      dtype_(dtype),
      device_(storage_->device()) {
  refresh_numel_and_contiguity();
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)),
      sizes_(sizes),
      strides_(strides),
      storage_offset_(storage_offset),
      key_set_(backend_key(storage_->device().type)),
      dtype_(dtype),
      device_(storage_->device()) {
  refresh_numel_and_contiguity();
}

TensorImpl::TensorImpl(DispatchKeySet keys, ScalarType dtype, Device device)
    : key_set_(keys), dtype_(dtype), device_(device) {}

TensorImpl::~TensorImpl() = default;

void* TensorImpl::operator new(size_t nbytes) { return cached_host_allocate(nbytes); }

void TensorImpl::operator delete(void* ptr, size_t nbytes) { cached_host_deallocate(ptr, nbytes); }

void TensorImpl::throw_no_storage() const {
  STRATA_FAIL(impl_name(), "tensor has no storage: its data cannot be accessed");
}

void TensorImpl::bump_version() {
  if (storage_) storage_->bump_version();
}

void TensorImpl::set_sizes_contiguous(IntArrayRef sizes) {
  sizes_ = sizes;
  strides_ = contiguous_strides(sizes);
  refresh_numel_and_contiguity();
}

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides,
                                       int64_t storage_offset) {
  STRATA_CHECK(sizes.size() == strides.size(), impl_name(), "got ", sizes.size(), " sizes but ",
               strides.size(), " strides");
  sizes_ = sizes;
  strides_ = strides;
  storage_offset_ = storage_offset;
  refresh_numel_and_contiguity();
}

void TensorImpl::copy_shape_from(const TensorImpl& other) {
  sizes_ = other.sizes_;
  strides_ = other.strides_;
  storage_offset_ = other.storage_offset_;
  numel_ = other.numel_;
  is_contiguous_ = other.is_contiguous_;
  is_wrapped_number_ = other.is_wrapped_number_;
}

int64_t checked_numel(IntArrayRef sizes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) overflow = __builtin_mul_overflow(n, s, &n) || overflow;
  if (__builtin_expect(!overflow, 1)) return n;
  // An overflow before a zero size still makes an empty tensor.
  return std::find(sizes.begin(), sizes.end(), 0) != sizes.end() ? 0 : -1;
}

void TensorImpl::refresh_numel_and_contiguity() {
  const int64_t n = checked_numel(sizes_);
  STRATA_CHECK(n >= 0, "strata", "a tensor of shape ", shape_string(sizes_),
               " would have more than 2^63 - 1 elements");
  numel_ = n;
  // Strides of size-1 dims do not matter, nor any stride of an empty tensor.
  bool contiguous = true;
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0 && n != 0;) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) {
      contiguous = false;
      break;
    }
    expected *= sizes_[i];
  }
  is_contiguous_ = contiguous;
}

IntrusivePtr<TensorImpl> host_readable(const TensorImpl& t) {
  Allocator* allocator = allocator_for(t.device().type);
  if (allocator->host_accessible()) return IntrusivePtr<TensorImpl>(const_cast<TensorImpl*>(&t));
  int64_t span = t.numel() == 0 ? 0 : 1;
  for (int64_t d = 0; d < t.dim() && span > 0; ++d) span += (t.sizes()[d] - 1) * t.strides()[d];
  const size_t nbytes = static_cast<size_t>(span) * element_size(t.dtype());
  Storage host = StorageImpl::allocate(nbytes, kCPU);
  if (nbytes > 0) allocator->copy_to_host(host->data(), t.data_ptr(), nbytes, t.device().index);
  return make_intrusive<TensorImpl>(std::move(host), t.dtype(), t.sizes(), t.strides(), 0);
}

}  // namespace strata
