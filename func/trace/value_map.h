#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace strata {

// The recorder's map from a tensor (its TensorImpl's address) to its value id:
// open addressing with linear probing, so binding a value allocates nothing until
// the table grows. A slot holds its tensor (bind()), so no bound address is reused
// while the trace lasts, unless the caller keeps the tensor alive itself
// (bind_borrowed(): the trace's inputs, which its caller holds throughout), which
// saves a reference count taken and dropped per input. A trace's table, once
// emptied, is kept for the thread's next trace, so a small trace allocates no
// table at all.
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
      if (s.impl == impl) return s.id;
      if (s.impl == nullptr) return -1;
    }
  }

  // Binds t to id, replacing the id of an in-place op's argument.
  void bind(const Tensor& t, int64_t id) { insert(t, id, true); }
  // The same for a tensor that outlives the map's use (no lookups after its end).
  void bind_borrowed(const Tensor& t, int64_t id) { insert(t, id, false); }
  // bind_borrowed() of a tensor not bound yet; false, binding nothing, if it is.
  bool bind_borrowed_if_new(const Tensor& t, int64_t id) {
    Slot& s = slot_for(t.impl());
    if (s.impl != nullptr) return false;
    s.id = id;
    occupy(s, t.impl());
    return true;
  }

 private:
  static constexpr size_t kInitialSlots = 32;  // a power of two
  struct Slot {
    const TensorImpl* impl = nullptr;
    int64_t id = -1;
    Tensor owned;  // impl's tensor, unless it was bound borrowed
  };

  size_t mask() const { return slots_.size() - 1; }
  size_t index(const TensorImpl* impl) const {
    // Fibonacci hashing: the address's low bits are alignment, its high ones shared.
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(impl) * 0x9E3779B97F4A7C15ull) >> 32) &
           mask();
  }
  Slot& slot_for(const TensorImpl* impl) {
    size_t i = index(impl);
    while (slots_[i].impl != nullptr && slots_[i].impl != impl) i = (i + 1) & mask();
    return slots_[i];
  }
  void insert(const Tensor& t, int64_t id, bool own) {
    Slot& s = slot_for(t.impl());
    s.id = id;
    if (own && !s.owned.defined()) s.owned = t;
    if (s.impl == nullptr) occupy(s, t.impl());
  }
  // Takes the empty slot s for impl (its id and tensor set).
  void occupy(Slot& s, const TensorImpl* impl) {
    s.impl = impl;
    if (used_ < kInitialSlots / 2) used_slots_[used_] = static_cast<uint8_t>(&s - slots_.data());
    if (++used_ * 2 > slots_.size()) grow();
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (Slot& s : old) {
      if (s.impl != nullptr) slot_for(s.impl) = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  size_t used_ = 0;
  // The slots taken, in order, while the table has its initial size (at most
  // half of it is used before it grows): the ones to empty for the next trace.
  uint8_t used_slots_[kInitialSlots / 2];
  // The emptied initial-size table of this thread's last trace, or nothing.
  static std::vector<Slot>& spare();
};

}  // namespace strata
