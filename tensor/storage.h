#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tensor/device.h"
#include "tensor/intrusive_ptr.h"

namespace strata {

class Allocator;

// A ref-counted buffer. Views of one tensor share a StorageImpl, and with it the
// version counter that in-place operators bump (autograd checks it to detect a
// saved tensor modified before backward).
class StorageImpl final : public RefCounted {
 public:
  // Allocates nbytes on device. On host-accessible devices the StorageImpl and
  // its data come from one allocator block: one allocation per tensor buffer.
  static IntrusivePtr<StorageImpl> allocate(size_t nbytes, Device device);
  // Memory owned elsewhere (a DLPack tensor): `owner->deallocate(data, nbytes)`
  // is called once, when the storage dies; the owner may delete itself there.
  static IntrusivePtr<StorageImpl> adopt_external(void* data, size_t nbytes, Device device,
                                                  Allocator* owner);

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  // A load and a store, not a read-modify-write (a locked instruction on every
  // in-place op): the version only has to differ from the one a reader saved,
  // and two threads writing one storage at once (a race on its data anyway)
  // still leave it different from before either write.
  void bump_version() {
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

 private:
  StorageImpl(void* data, size_t nbytes, Device device, Allocator* allocator, bool inline_header);
  void release_self() override;

  void* data_;
  size_t nbytes_;
  Device device_;
  bool inline_header_;
  Allocator* allocator_;
  std::atomic<uint32_t> version_{0};
};

using Storage = IntrusivePtr<StorageImpl>;

}  // namespace strata
