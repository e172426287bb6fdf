// The CUDA runtime behind kernels/cuda/runtime.h: errors, devices, streams. A
// machine without a GPU or driver has zero devices: the library still loads and
// every CPU path works.
#include "kernels/cuda/runtime.h"

#include <array>
#include <mutex>

#include "tensor/error.h"

namespace strata {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return count;
}

void cuda_synchronize(int device_index) {
  const Device device = cuda(device_index);
  gpu::DeviceGuard guard(device);
  STRATA_CUDA_CHECK(cudaStreamSynchronize(gpu::stream_for(device)), "cuda_synchronize");
}

namespace gpu {

void check(cudaError_t status, const char* op, const char* what) {
  if (__builtin_expect(status == cudaSuccess, 1)) return;
  cudaGetLastError();
  STRATA_FAIL(op, what, " failed: ", cudaGetErrorString(status), " (", cudaGetErrorName(status),
              ")");
}

void check_launch(const char* op) {
  const cudaError_t status = cudaGetLastError();
  if (__builtin_expect(status == cudaSuccess, 1)) return;
  STRATA_FAIL(op, "kernel launch failed: ", cudaGetErrorString(status), " (",
              cudaGetErrorName(status), ")");
}

namespace {
constexpr int kMaxDevices = 64;  // Device::index is an int8_t
}  // namespace

cudaStream_t stream_for(Device device) {
  static const int device_count = cuda_device_count();
  static std::array<cudaStream_t, kMaxDevices> streams{};
  static std::array<std::once_flag, kMaxDevices> created;
  const int index = device.index;
  STRATA_CHECK(device.is_cuda() && index >= 0 && index < device_count, "cuda", "no CUDA device ",
               device, " (", device_count, " device(s) present)");
  std::call_once(created[index], [&] {
    DeviceGuard guard(device);
    STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[index], cudaStreamNonBlocking),
                      "cuda stream");
  });
  return streams[index];
}

DeviceGuard::DeviceGuard(Device device) {
  int current = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&current), "cuda");
  if (current != device.index) {
    STRATA_CUDA_CHECK(cudaSetDevice(device.index), "cuda");
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

void check_same_device(const char* op, Device expected, Device other) {
  STRATA_CHECK(expected == other, op, "expected all tensors on one device, got ", expected, " and ",
               other);
}

}  // namespace gpu
}  // namespace strata
