// Copies between the host and a GPU: copy_kernel of kernels/cuda/elementwise.h.
//
// Note [Host-device transfers]
// Bytes cross the bus only between contiguous buffers of one dtype: dtype
// conversion, broadcasting and strides are resolved on the side that has them
// (the CPU kernels on the host, copy_on_device on the GPU), into a contiguous
// temporary when needed. Large transfers go through two pinned staging buffers
// per device, so copying one chunk between pageable and pinned memory overlaps the
// DMA of the other; small ones are a single synchronous cudaMemcpy.
#include <cstring>
#include <mutex>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

constexpr size_t kStagedAbove = size_t{1} << 20;
constexpr size_t kChunk = size_t{8} << 20;

// Made on a device's first large transfer and kept for the program's life.
struct Staging {
  std::mutex mutex;  // one large transfer at a time per device
  std::once_flag made;
  void* buffers[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};
};

Staging& staging_for(Device device) {
  static Staging staging[64];
  Staging& s = staging[device.index];
  std::call_once(s.made, [&] {
    for (int k = 0; k < 2; ++k) {
      STRATA_CUDA_CHECK(cudaMallocHost(&s.buffers[k], kChunk), "copy: pinned staging buffer");
      STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&s.done[k], cudaEventDisableTiming),
                        "copy: staging event");
    }
  });
  return s;
}

void host_to_device(void* dst, const void* src, size_t nbytes, Device device) {
  const cudaStream_t stream = stream_for(device);
  if (nbytes <= kStagedAbove) {
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream),
                      "copy to device");
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream), "copy to device");
    return;
  }
  Staging& s = staging_for(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  for (size_t offset = 0, k = 0; offset < nbytes; offset += kChunk, k ^= 1) {
    const size_t n = nbytes - offset < kChunk ? nbytes - offset : kChunk;
    STRATA_CUDA_CHECK(cudaEventSynchronize(s.done[k]), "copy to device");
    std::memcpy(s.buffers[k], static_cast<const char*>(src) + offset, n);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + offset, s.buffers[k], n,
                                      cudaMemcpyHostToDevice, stream),
                      "copy to device");
    STRATA_CUDA_CHECK(cudaEventRecord(s.done[k], stream), "copy to device");
  }
  STRATA_CUDA_CHECK(cudaStreamSynchronize(stream), "copy to device");
}

void device_to_host(void* dst, const void* src, size_t nbytes, Device device) {
  const cudaStream_t stream = stream_for(device);
  if (nbytes <= kStagedAbove) {
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream),
                      "copy to host");
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream), "copy to host");
    return;
  }
  Staging& s = staging_for(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  // Chunk i is queued before chunk i - 1 is unpacked, so its DMA overlaps the memcpy.
  auto queue = [&](size_t offset, int k) {
    const size_t n = nbytes - offset < kChunk ? nbytes - offset : kChunk;
    STRATA_CUDA_CHECK(cudaMemcpyAsync(s.buffers[k], static_cast<const char*>(src) + offset, n,
                                      cudaMemcpyDeviceToHost, stream),
                      "copy to host");
    STRATA_CUDA_CHECK(cudaEventRecord(s.done[k], stream), "copy to host");
  };
  queue(0, 0);
  for (size_t offset = 0, k = 0; offset < nbytes; offset += kChunk, k ^= 1) {
    const size_t n = nbytes - offset < kChunk ? nbytes - offset : kChunk;
    if (offset + kChunk < nbytes) queue(offset + kChunk, static_cast<int>(k ^ 1));
    STRATA_CUDA_CHECK(cudaEventSynchronize(s.done[k]), "copy to host");
    std::memcpy(static_cast<char*>(dst) + offset, s.buffers[k], n);
  }
}

// Whether t's memory is the contiguous buffer of out's shape and dtype.
bool matches_dense(const Tensor& t, const Tensor& out) {
  return t.dtype() == out.dtype() && t.sizes() == out.sizes() && t.is_contiguous();
}

}  // namespace

void copy_kernel(const Tensor& out, const Tensor& src) {
  const Device to = out.device();
  const Device from = src.device();
  if (to == from) return copy_on_device(out, src);
  // A 0-dim CPU tensor is a value the launcher passes by argument.
  if (to.is_cuda() && from.is_cpu() && src.dim() == 0) return copy_on_device(out, src);
  STRATA_CHECK(to.is_cpu() || from.is_cpu(), "strata::copy_", "cannot copy from ", from, " to ", to,
               ": copies between two GPUs are not supported");
  if (out.numel() == 0) return;
  const size_t nbytes = static_cast<size_t>(out.numel()) * element_size(out.dtype());

  if (to.is_cuda()) {
    DeviceGuard guard(to);
    // On the host: src in out's dtype and shape, contiguous.
    Tensor host = src;
    if (!matches_dense(src, out)) {
      host = make_empty_tensor(out.sizes(), out.dtype(), kCPU, "strata::copy_");
      cpu::copy_kernel(host, src);
    }
    Tensor target = out.is_contiguous()
                        ? out
                        : make_empty_tensor(out.sizes(), out.dtype(), to, "strata::copy_");
    host_to_device(target.impl()->data_ptr(), host.impl()->data_ptr(), nbytes, to);
    if (!out.is_contiguous()) copy_on_device(out, target);
    return;
  }

  DeviceGuard guard(from);
  // On the device: src in out's dtype and shape, contiguous.
  Tensor device = src;
  if (!matches_dense(src, out)) {
    device = make_empty_tensor(out.sizes(), out.dtype(), from, "strata::copy_");
    copy_on_device(device, src);
  }
  Tensor target = out.is_contiguous()
                      ? out
                      : make_empty_tensor(out.sizes(), out.dtype(), kCPU, "strata::copy_");
  device_to_host(target.impl()->data_ptr(), device.impl()->data_ptr(), nbytes, from);
  if (!out.is_contiguous()) cpu::copy_kernel(out, target);
}

}  // namespace strata::gpu
