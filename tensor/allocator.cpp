#include "tensor/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "tensor/error.h"

namespace strata {
namespace {

// Size classes are powers of two from 64 B; blocks up to kThreadCacheMaxBytes are
// cached per thread, bigger ones (to kMaxClassBytes) in the shared cache, and
// anything bigger is rounded to 1 MiB and cached by exact size.
constexpr int kMinClassLog2 = 6;
constexpr size_t kThreadCacheMaxBytes = size_t{1} << 20;
constexpr size_t kThreadCacheBytesPerClass = size_t{4} << 20;
constexpr size_t kSharedCacheLimitBytes = size_t{2} << 30;
constexpr size_t kLargeGranule = size_t{1} << 20;
// Indexed by log2(size) - kMinClassLog2; only 64 B .. 1 MiB are used, the rest of
// the array keeps every index the compiler can see in bounds.
constexpr int kNumThreadClasses = 65 - kMinClassLog2;

// Counted on the slow paths only: the cached hot path touches no shared state.
std::atomic<size_t> g_shared_bytes_cached{0};
std::atomic<size_t> g_system_allocations{0};
std::atomic<size_t> g_system_frees{0};

bool caching_from_environment() {
  const char* env = std::getenv("STRATA_CPU_ALLOCATOR_CACHE");
  return !(env && env[0] == '0');
}
std::atomic<bool> g_caching{caching_from_environment()};

size_t rounded_size(size_t nbytes) {
  if (nbytes <= (size_t{1} << kMinClassLog2)) return size_t{1} << kMinClassLog2;
  if (nbytes <= kThreadCacheMaxBytes) return std::bit_ceil(nbytes);
  return (nbytes + kLargeGranule - 1) / kLargeGranule * kLargeGranule;
}

void system_free(void* p) {
  g_system_frees.fetch_add(1, std::memory_order_relaxed);
  std::free(p);
}

void* system_allocate(size_t bytes) {
  g_system_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = std::aligned_alloc(Allocator::kAlignment, bytes);
  STRATA_CHECK(p != nullptr, "allocator", "out of memory allocating ", bytes, " bytes on cpu");
  return p;
}

// A free block of a size class holds the pointer to the next one, so taking and
// returning a block are a few loads and stores (one op under a transform makes
// a dozen small blocks: tensors, wrappers, graph nodes, argument stacks).
struct FreeBlock {
  FreeBlock* next;
};

struct FreeList {
  FreeBlock* head = nullptr;
  size_t count = 0;
};

struct ThreadCache {
  std::array<FreeList, kNumThreadClasses> free_lists;
  ~ThreadCache() { release(); }
  // Derived from the counts, so the hot path keeps one counter per list.
  size_t bytes_cached() const {
    size_t bytes = 0;
    for (size_t c = 0; (size_t{1} << (c + kMinClassLog2)) <= kThreadCacheMaxBytes; ++c) {
      bytes += free_lists[c].count << (c + kMinClassLog2);
    }
    return bytes;
  }
  void release() {
    for (FreeList& list : free_lists) {
      while (FreeBlock* block = list.head) {
        list.head = block->next;
        system_free(block);
      }
      list.count = 0;
    }
  }
};

// The hot path reads a plain initial-exec pointer (no TLS-init guard, no
// __tls_get_addr); the cache itself lives in a thread_local with a destructor
// that frees its blocks at thread exit. A block freed later in that thread's
// exit goes straight back to the system.
thread_local ThreadCache* tls_cache __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool tls_cache_destroyed __attribute__((tls_model("initial-exec"))) = false;

struct ThreadCacheOwner {
  ThreadCache cache;
  ~ThreadCacheOwner() {
    tls_cache = nullptr;
    tls_cache_destroyed = true;
  }
};

[[gnu::noinline]] ThreadCache* make_thread_cache() {
  if (tls_cache_destroyed) return nullptr;
  thread_local ThreadCacheOwner owner;
  tls_cache = &owner.cache;
  return tls_cache;
}

ThreadCache* thread_cache() {
  if (__builtin_expect(tls_cache != nullptr, 1)) return tls_cache;
  return make_thread_cache();
}

class SharedCache {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(bytes);
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    g_shared_bytes_cached.fetch_sub(bytes, std::memory_order_relaxed);
    return p;
  }
  bool put(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (g_shared_bytes_cached.load(std::memory_order_relaxed) + bytes > kSharedCacheLimitBytes) {
      return false;
    }
    blocks_[bytes].push_back(p);
    g_shared_bytes_cached.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [bytes, list] : blocks_) {
      for (void* p : list) system_free(p);
      g_shared_bytes_cached.fetch_sub(bytes * list.size(), std::memory_order_relaxed);
    }
    blocks_.clear();
  }

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> blocks_;
};

SharedCache& shared_cache() {
  static SharedCache* cache = new SharedCache();  // outlives threads' exit handlers
  return *cache;
}

int thread_class(size_t rounded) { return std::countr_zero(rounded) - kMinClassLog2; }

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override { return cached_host_allocate(nbytes); }
  void deallocate(void* ptr, size_t nbytes) override { cached_host_deallocate(ptr, nbytes); }
  bool host_accessible() const override { return true; }
  void release_cached() override { release_cpu_allocator_cache(); }
};

std::array<std::atomic<Allocator*>, kNumDeviceTypes>& allocator_table() {
  static CpuAllocator* cpu = new CpuAllocator();
  static std::array<std::atomic<Allocator*>, kNumDeviceTypes> table{cpu, nullptr};
  return table;
}

}  // namespace

namespace {

// The thread cache's free list for a request, or null when the request is not
// served by it (caching off, a block too big, or the thread past its exit).
FreeList* thread_free_list(size_t bytes) {
  if (!g_caching.load(std::memory_order_relaxed) || bytes > kThreadCacheMaxBytes) return nullptr;
  ThreadCache* cache = thread_cache();
  return cache ? &cache->free_lists[thread_class(bytes)] : nullptr;
}

// Off the hot path, kept out of line so that taking or returning a cached block
// saves no registers and reads a handful of instructions.
[[gnu::noinline]] void* allocate_uncached(size_t bytes) {
  if (g_caching.load(std::memory_order_relaxed) && bytes > kThreadCacheMaxBytes) {
    if (void* p = shared_cache().take(bytes)) return p;
  }
  return system_allocate(bytes);
}

[[gnu::noinline]] void deallocate_uncached(void* ptr, size_t bytes) {
  if (g_caching.load(std::memory_order_relaxed) && bytes > kThreadCacheMaxBytes &&
      shared_cache().put(ptr, bytes)) {
    return;
  }
  system_free(ptr);
}

}  // namespace

void* cached_host_allocate(size_t nbytes) {
  const size_t bytes = rounded_size(nbytes);
  FreeList* list = thread_free_list(bytes);
  if (list != nullptr && list->head != nullptr) {
    FreeBlock* block = list->head;
    list->head = block->next;
    --list->count;
    return block;
  }
  return allocate_uncached(bytes);
}

void cached_host_deallocate(void* ptr, size_t nbytes) {
  const size_t bytes = rounded_size(nbytes);
  FreeList* list = thread_free_list(bytes);
  if (list != nullptr && list->count * bytes < kThreadCacheBytesPerClass) {
    list->head = new (ptr) FreeBlock{list->head};
    ++list->count;
    return;
  }
  deallocate_uncached(ptr, bytes);
}

Allocator* allocator_for(DeviceType type) {
  Allocator* a = allocator_table()[static_cast<int>(type)].load(std::memory_order_acquire);
  STRATA_CHECK(a != nullptr, "allocator", "no allocator for device type ", Device(type).str(),
               ": Strata was built without that backend");
  return a;
}

void Allocator::copy_to_host(void* dst, const void* src, size_t nbytes, int /*device_index*/) {
  STRATA_CHECK(host_accessible(), "allocator", "internal: a device allocator must override copy_to_host");
  std::memcpy(dst, src, nbytes);
}

void register_allocator(DeviceType type, Allocator* allocator) {
  allocator_table()[static_cast<int>(type)].store(allocator, std::memory_order_release);
}

size_t device_block_size(size_t nbytes) {
  constexpr size_t kUnit = 512;
  constexpr size_t kMaxStep = size_t{2} << 20;
  const size_t step = std::clamp(std::bit_floor(nbytes) / 8, kUnit, kMaxStep);
  return nbytes == 0 ? kUnit : (nbytes + step - 1) / step * step;
}

CpuAllocatorStats cpu_allocator_stats() {
  ThreadCache* cache = thread_cache();
  return {cache ? cache->bytes_cached() : 0, g_shared_bytes_cached.load(),
          g_system_allocations.load(), g_system_frees.load()};
}

void set_cpu_allocator_caching(bool enabled) {
  g_caching.store(enabled);
  if (!enabled) release_cpu_allocator_cache();
}

bool cpu_allocator_caching() { return g_caching.load(); }

void release_cpu_allocator_cache() {
  if (ThreadCache* cache = thread_cache()) cache->release();
  shared_cache().release();
}

}  // namespace strata
