#pragma once

#include <atomic>
#include <cstdint>

#include "tensor/intrusive_ptr.h"

namespace strata {

// Note [Counter-based random numbers]
// A Generator is a seed plus a counter. A random op reserves a block of counter
// values (one per element) and element i of the block is a pure function of
// (seed, first + i) through the Philox4x32-10 bijection (tensor/philox.h). So a
// result never depends on the thread count or the chunking of a parallel loop,
// and CPU and GPU kernels produce the same numbers from the same generator.
class GeneratorImpl final : public RefCounted {
 public:
  explicit GeneratorImpl(uint64_t seed) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_.load(std::memory_order_relaxed); }
  void set_offset(uint64_t offset) { offset_.store(offset, std::memory_order_relaxed); }
  // Reserves n counter values and returns the first.
  uint64_t reserve(uint64_t n) { return offset_.fetch_add(n, std::memory_order_relaxed); }

 private:
  uint64_t seed_;
  std::atomic<uint64_t> offset_{0};
};

// A shared handle: copies draw from the same stream.
class Generator {
 public:
  explicit Generator(uint64_t seed) : impl_(make_intrusive<GeneratorImpl>(seed)) {}
  uint64_t seed() const { return impl_->seed(); }
  uint64_t offset() const { return impl_->offset(); }
  void set_offset(uint64_t offset) const { impl_->set_offset(offset); }
  uint64_t reserve(uint64_t n) const { return impl_->reserve(n); }
  GeneratorImpl* impl() const { return impl_.get(); }

  friend bool operator==(const Generator& a, const Generator& b) { return a.impl_ == b.impl_; }

 private:
  IntrusivePtr<GeneratorImpl> impl_;
};

// The generator random ops use when none is given (seed 0 unless reseeded).
Generator default_generator();
void manual_seed(uint64_t seed);

}  // namespace strata
