#pragma once

// The CUDA runtime as the backend's files see it: errors turned into
// strata::Error, the current device and its stream. Included by kernels/cuda/
// sources only (it pulls in cuda_runtime.h).

#include <cuda_runtime.h>

#include "tensor/device.h"

namespace strata::gpu {

// Throws strata::Error("[op] <what> failed: <cudaGetErrorString>") unless status
// is cudaSuccess; clears the runtime's last error first so later calls start clean.
void check(cudaError_t status, const char* op, const char* what);
#define STRATA_CUDA_CHECK(expr, op) ::strata::gpu::check((expr), (op), #expr)
// After a kernel launch: a launch error (bad configuration, no device) raised
// with the op's name.
void check_launch(const char* op);

// Note [One stream per device]
// Every kernel, copy and library call of the backend runs on the device's one
// stream, in order. So a block the caching allocator hands out again is never
// still in use by earlier work (that work precedes the new user's on the stream),
// and a copy to the host only has to wait for that stream.
cudaStream_t stream_for(Device device);

// Makes `device` current for the calling thread while it lives.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Raises the op's error unless every tensor of `devices` is on `expected`.
void check_same_device(const char* op, Device expected, Device other);

}  // namespace strata::gpu
