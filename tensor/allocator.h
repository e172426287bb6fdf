#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/device.h"

namespace strata {

// Every tensor buffer comes from the allocator of its device type.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory aligned to at least kAlignment bytes; nbytes may be 0.
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  // Whether the CPU can read the memory (a StorageImpl header can then share it).
  virtual bool host_accessible() const = 0;
  // Returns cached blocks to the system.
  virtual void release_cached() {}
  // The same on one device of the type (a GPU): a backend whose memory belongs to
  // one device of several overrides these; the host ignores the index.
  virtual void* allocate_on(size_t nbytes, int /*device_index*/) { return allocate(nbytes); }
  virtual void deallocate_on(void* ptr, size_t nbytes, int /*device_index*/) {
    deallocate(ptr, nbytes);
  }
  // Copies nbytes of this allocator's memory at src into host memory at dst,
  // after the work queued on it: how tensor/ reads device values (printing,
  // to_vector) without calling operators.
  virtual void copy_to_host(void* dst, const void* src, size_t nbytes, int device_index);

  static constexpr size_t kAlignment = 64;
};

Allocator* allocator_for(DeviceType type);
// Backends outside the core (CUDA) install their allocator at load time.
void register_allocator(DeviceType type, Allocator* allocator);

// Note [CPU allocator cache]
// Freed CPU blocks are kept per size class and reused: writing fresh pages costs
// more than the arithmetic of a per-sample gradient. Small blocks are cached per
// thread (no lock on the hot path); large ones in a shared, bounded cache. Set
// STRATA_CPU_ALLOCATOR_CACHE=0, or call set_cpu_allocator_caching(false), to turn
// caching off (leak checkers then see every block).
struct CpuAllocatorStats {
  size_t thread_bytes_cached = 0;  // held for reuse by the calling thread
  size_t shared_bytes_cached = 0;  // held for reuse by the shared large-block cache
  size_t system_allocations = 0;   // blocks obtained from the system so far
  size_t system_frees = 0;         // blocks returned to the system so far
};
CpuAllocatorStats cpu_allocator_stats();
void set_cpu_allocator_caching(bool enabled);
bool cpu_allocator_caching();
// Host memory from the same per-thread cache, for small objects allocated on
// every op (TensorImpl uses it for itself).
void* cached_host_allocate(size_t nbytes);
void cached_host_deallocate(void* ptr, size_t nbytes);

// A std allocator over that cache, for containers made and freed on every op
// (boxed argument stacks, autograd nodes).
template <class T>
struct CachedAllocator {
  using value_type = T;
  CachedAllocator() = default;
  template <class U>
  CachedAllocator(const CachedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(cached_host_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { cached_host_deallocate(p, n * sizeof(T)); }
  friend bool operator==(const CachedAllocator&, const CachedAllocator&) { return true; }
};

// Frees every cached block of the calling thread and the shared cache.
void release_cpu_allocator_cache();

// Note [CUDA caching allocator]
// Device memory (plain cudaMalloc, never managed) is kept per device and size
// class when freed and handed out again: cudaMalloc and cudaFree synchronize the
// device and cost far more than a small kernel. Reuse is safe because all work
// runs on one stream per device (Note [One stream per device] in
// kernels/cuda/runtime.h). When cudaMalloc fails the cache is released and the
// allocation tried once more before raising an out-of-memory error. Set
// STRATA_CUDA_ALLOCATOR_CACHE=0, or call set_cuda_allocator_caching(false), to
// free every block at once (leak checkers then see each one). Without the CUDA
// backend these report zeros and do nothing.
// The block a device allocation of nbytes takes, which is also what it counts in
// bytes_in_use: whole 512 B units up to 4 KiB, then eight classes per power of two
// with steps of at most 2 MiB, so a block wastes under 12.5 % (and under 2 MiB)
// while a freed block still fits the next request of about the same size.
size_t device_block_size(size_t nbytes);
struct CudaAllocatorStats {
  size_t bytes_in_use = 0;        // held by live tensors, in rounded block sizes
  size_t peak_bytes_in_use = 0;   // the most bytes_in_use reached since the last reset
  size_t bytes_cached = 0;        // freed and kept for reuse
  size_t device_allocations = 0;  // cudaMalloc calls so far
  size_t device_frees = 0;        // cudaFree calls so far
};
CudaAllocatorStats cuda_allocator_stats();
// Restarts peak_bytes_in_use from the bytes in use now (summed over devices).
void reset_cuda_allocator_peak();
void set_cuda_allocator_caching(bool enabled);
bool cuda_allocator_caching();
// Returns every cached block of every device to the driver.
void release_cuda_allocator_cache();
// Waits until the work queued on the device's stream has finished.
void cuda_synchronize(int device_index = 0);

}  // namespace strata
