#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace strata {

// The recorder's map from a tensor (its TensorImpl's address) to its value id:
// open addressing with linear probing, so binding a value allocates nothing until
// the table grows. Each slot holds its tensor, so no bound address is reused
// while the trace lasts. A trace's table, once emptied, is kept for the thread's
// next trace, so a small trace allocates no table at all.
class ValueMap {
 public:
  ValueMap();
  ~ValueMap();
  ValueMap(const ValueMap&) = delete;
  ValueMap& operator=(const ValueMap&) = delete;

  // The id bound to impl, or -1.
  int64_t find(const TensorImpl* impl) const {
    for (size_t i = index(impl);; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.tensor.impl() == impl) return s.id;
      if (!s.tensor.defined()) return -1;
    }
  }

  // Binds t to id, replacing the id of an in-place op's argument.
  void bind(const Tensor& t, int64_t id) {
    Slot& s = slot_for(t.impl());
    if (!s.tensor.defined()) {
      s.tensor = t;
      if (++used_ * 2 > slots_.size()) {
        s.id = id;
        grow();
        return;
      }
    }
    s.id = id;
  }

 private:
  static constexpr size_t kInitialSlots = 32;  // a power of two
  struct Slot {
    Tensor tensor;
    int64_t id = -1;
  };

  size_t mask() const { return slots_.size() - 1; }
  size_t index(const TensorImpl* impl) const {
    // Fibonacci hashing: the address's low bits are alignment, its high ones shared.
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(impl) * 0x9E3779B97F4A7C15ull) >> 32) &
           mask();
  }
  Slot& slot_for(const TensorImpl* impl) {
    size_t i = index(impl);
    while (slots_[i].tensor.defined() && slots_[i].tensor.impl() != impl) i = (i + 1) & mask();
    return slots_[i];
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (Slot& s : old) {
      if (s.tensor.defined()) {
        Slot& to = slot_for(s.tensor.impl());
        to.id = s.id;
        to.tensor = std::move(s.tensor);
      }
    }
  }

  std::vector<Slot> slots_;
  size_t used_ = 0;
  // The emptied initial-size table of this thread's last trace, or nothing.
  static thread_local std::vector<Slot> spare_;
};

}  // namespace strata
