// The CUDA caching allocator (Note [CUDA caching allocator] in tensor/allocator.h),
// registered for DeviceType::CUDA when the library loads.
#include "tensor/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kernels/cuda/runtime.h"
#include "tensor/error.h"

namespace strata {
namespace {

constexpr int kMaxDevices = 64;

bool caching_from_environment() {
  const char* env = std::getenv("STRATA_CUDA_ALLOCATOR_CACHE");
  return !(env && env[0] == '0');
}

struct DevicePool {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // by rounded size
  size_t bytes_in_use = 0;
  size_t peak_bytes_in_use = 0;
  size_t bytes_cached = 0;

  void add_in_use(size_t size) {
    bytes_in_use += size;
    peak_bytes_in_use = std::max(peak_bytes_in_use, bytes_in_use);
  }
};

class CudaCachingAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    int device = 0;
    STRATA_CUDA_CHECK(cudaGetDevice(&device), "cuda allocator");
    return allocate_on(nbytes, device);
  }
  void deallocate(void* ptr, size_t nbytes) override {
    int device = 0;
    STRATA_CUDA_CHECK(cudaGetDevice(&device), "cuda allocator");
    deallocate_on(ptr, nbytes, device);
  }
  bool host_accessible() const override { return false; }
  void release_cached() override { release_all(); }

  void* allocate_on(size_t nbytes, int device) override {
    if (nbytes == 0) return nullptr;
    // Checks the index and that a device exists before touching the runtime.
    gpu::stream_for(cuda(device));
    const size_t size = device_block_size(nbytes);
    DevicePool& pool = pools_[device];
    {
      std::lock_guard<std::mutex> lock(pool.mutex);
      auto it = pool.free_blocks.find(size);
      if (it != pool.free_blocks.end() && !it->second.empty()) {
        void* block = it->second.back();
        it->second.pop_back();
        pool.bytes_cached -= size;
        pool.add_in_use(size);
        return block;
      }
    }
    gpu::DeviceGuard guard(cuda(device));
    void* block = nullptr;
    cudaError_t status = cudaMalloc(&block, size);
    device_allocations_.fetch_add(1, std::memory_order_relaxed);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_device(device);
      status = cudaMalloc(&block, size);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      STRATA_FAIL("cuda allocator", "out of memory allocating ", nbytes, " bytes on ", cuda(device),
                  " (", pool_in_use(device),
                  " bytes held by tensors): ", cudaGetErrorString(status));
    }
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.add_in_use(size);
    return block;
  }

  void deallocate_on(void* ptr, size_t nbytes, int device) override {
    if (ptr == nullptr) return;
    const size_t size = device_block_size(nbytes);
    DevicePool& pool = pools_[device];
    if (caching_.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(pool.mutex);
      pool.free_blocks[size].push_back(ptr);
      pool.bytes_in_use -= size;
      pool.bytes_cached += size;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(pool.mutex);
      pool.bytes_in_use -= size;
    }
    free_block(ptr, device);
  }

  void copy_to_host(void* dst, const void* src, size_t nbytes, int device) override {
    const Device d = cuda(device);
    gpu::DeviceGuard guard(d);
    const cudaStream_t stream = gpu::stream_for(d);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream),
                      "copy to host");
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream), "copy to host");
  }

  void release_all() {
    for (int d = 0; d < kMaxDevices; ++d) release_device(d);
  }

  CudaAllocatorStats stats() {
    CudaAllocatorStats s;
    for (DevicePool& pool : pools_) {
      std::lock_guard<std::mutex> lock(pool.mutex);
      s.bytes_in_use += pool.bytes_in_use;
      s.peak_bytes_in_use += pool.peak_bytes_in_use;
      s.bytes_cached += pool.bytes_cached;
    }
    s.device_allocations = device_allocations_.load(std::memory_order_relaxed);
    s.device_frees = device_frees_.load(std::memory_order_relaxed);
    return s;
  }

  void reset_peaks() {
    for (DevicePool& pool : pools_) {
      std::lock_guard<std::mutex> lock(pool.mutex);
      pool.peak_bytes_in_use = pool.bytes_in_use;
    }
  }

  std::atomic<bool> caching_{caching_from_environment()};

 private:
  size_t pool_in_use(int device) {
    std::lock_guard<std::mutex> lock(pools_[device].mutex);
    return pools_[device].bytes_in_use;
  }

  void free_block(void* ptr, int device) {
    gpu::DeviceGuard guard(cuda(device));
    // cudaFree waits for the device, so no queued kernel still reads the block.
    STRATA_CUDA_CHECK(cudaFree(ptr), "cuda allocator");
    device_frees_.fetch_add(1, std::memory_order_relaxed);
  }

  void release_device(int device) {
    DevicePool& pool = pools_[device];
    std::unordered_map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard<std::mutex> lock(pool.mutex);
      blocks.swap(pool.free_blocks);
      pool.bytes_cached = 0;
    }
    for (auto& [size, list] : blocks) {
      for (void* ptr : list) free_block(ptr, device);
    }
  }

  std::array<DevicePool, kMaxDevices> pools_;
  std::atomic<size_t> device_allocations_{0};
  std::atomic<size_t> device_frees_{0};
};

// Never destroyed: tensors in static storage may be freed after it would be.
CudaCachingAllocator& the_allocator() {
  static auto* allocator = new CudaCachingAllocator;
  return *allocator;
}

[[maybe_unused]] const bool registered = [] {
  register_allocator(DeviceType::CUDA, &the_allocator());
  return true;
}();

}  // namespace

CudaAllocatorStats cuda_allocator_stats() { return the_allocator().stats(); }
void reset_cuda_allocator_peak() { the_allocator().reset_peaks(); }

void set_cuda_allocator_caching(bool enabled) {
  the_allocator().caching_.store(enabled, std::memory_order_relaxed);
  if (!enabled) the_allocator().release_all();
}

bool cuda_allocator_caching() { return the_allocator().caching_.load(std::memory_order_relaxed); }

void release_cuda_allocator_cache() { the_allocator().release_all(); }

}  // namespace strata
