#pragma once

// Helpers of the CUDA tests: the skip without a device, and moving a tensor to a
// GPU with its layout (strides, offset, broadcast dims) intact.

#include <gtest/gtest.h>
#include <strata/strata.h>

#include "tensor/tensor_impl.h"

namespace strata::testing {

// Skips the calling test, counted as skipped with the reason, when no GPU is present.
#define STRATA_REQUIRE_CUDA()                                                                      \
  do {                                                                                             \
    if (!::strata::cuda_is_available()) {                                                          \
      GTEST_SKIP() << "no CUDA device present (or no driver, or Strata built without "             \
                      "CUDA): this test runs on a machine with a GPU (scripts/gpu_run_bundle.sh)"; \
    }                                                                                              \
  } while (0)

// t on `device` with the same sizes, strides and storage offset: its whole storage
// is copied, so a transposed, sliced or expanded sample stays one on the GPU. A
// wrapped number (a C++ number in `x * 2.0`) stays on the CPU, as in real use.
inline Tensor to_device_keeping_layout(const Tensor& t, Device device) {
  if (!t.defined() || t.device() == device || t.impl()->is_wrapped_number()) return t;
  const Storage& storage = t.impl()->storage();
  const int64_t esize = element_size(t.dtype());
  const int64_t elements = static_cast<int64_t>(storage->nbytes()) / esize;
  const Tensor flat(
      make_intrusive<TensorImpl>(storage, t.dtype(), IntArrayRef{elements}, IntArrayRef{1}, 0));
  const Tensor moved = flat.to(device);
  return Tensor(make_intrusive<TensorImpl>(moved.impl()->storage(), t.dtype(), t.sizes(),
                                           t.strides(), t.storage_offset()));
}

}  // namespace strata::testing
