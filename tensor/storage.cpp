#include "tensor/storage.h"

#include <new>

#include "tensor/allocator.h"

namespace strata {
namespace {
// The header occupies one alignment unit so the data stays 64-byte aligned.
constexpr size_t kHeaderBytes = Allocator::kAlignment;
static_assert(sizeof(StorageImpl) <= kHeaderBytes);
}  // namespace

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, Allocator* allocator,
                         bool inline_header)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      inline_header_(inline_header),
      allocator_(allocator) {}

IntrusivePtr<StorageImpl> StorageImpl::allocate(size_t nbytes, Device device) {
  Allocator* allocator = allocator_for(device.type);
  if (allocator->host_accessible()) {
    char* block = static_cast<char*>(allocator->allocate(kHeaderBytes + nbytes));
    auto* impl = new (block) StorageImpl(block + kHeaderBytes, nbytes, device, allocator, true);
    return IntrusivePtr<StorageImpl>::adopt_new(impl);
  }
  void* data = allocator->allocate_on(nbytes, device.index);
  return IntrusivePtr<StorageImpl>::adopt_new(
      new StorageImpl(data, nbytes, device, allocator, false));
}

IntrusivePtr<StorageImpl> StorageImpl::adopt_external(void* data, size_t nbytes, Device device,
                                                      Allocator* owner) {
  return IntrusivePtr<StorageImpl>::adopt_new(new StorageImpl(data, nbytes, device, owner, false));
}

void StorageImpl::release_self() {
  Allocator* allocator = allocator_;
  if (inline_header_) {
    size_t total = kHeaderBytes + nbytes_;
    this->~StorageImpl();
    allocator->deallocate(this, total);
  } else {
    allocator->deallocate_on(data_, nbytes_, device_.index);
    delete this;
  }
}

}  // namespace strata
