#include "tensor/dataless_storage.h"

#include "tensor/allocator.h"
#include "tensor/error.h"

namespace strata {
namespace {

class NoData final : public Allocator {
 public:
  void* allocate(size_t /*nbytes*/) override {
    STRATA_FAIL("strata", "a data-less stand-in storage cannot allocate");
  }
  void deallocate(void* /*ptr*/, size_t /*nbytes*/) override {}
  bool host_accessible() const override { return true; }
};

}  // namespace

IntrusivePtr<StorageImpl> dataless_storage(size_t nbytes) {
  static NoData no_data;
  return StorageImpl::adopt_external(nullptr, nbytes, Device(), &no_data);
}

}  // namespace strata
