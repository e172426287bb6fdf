#pragma once

#include <cstddef>

#include "tensor/intrusive_ptr.h"
#include "tensor/storage.h"

namespace strata {

// A CPU storage of nbytes with no memory behind it (its data pointer is null and
// it can never allocate): what a view kernel, which computes geometry only,
// needs under a tensor whose data does not exist (a shape function's or fake
// trace's stand-in). Reading through it is a bug the caller must not make.
IntrusivePtr<StorageImpl> dataless_storage(size_t nbytes);

}  // namespace strata
