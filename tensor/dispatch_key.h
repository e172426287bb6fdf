#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>

namespace strata {

// Note [Dispatch keys live in tensor/]
// A TensorImpl carries the set of keys that select its kernels, so the key
// vocabulary sits at the bottom layer even though only dispatcher/ interprets it.
// This header has no dependencies and no behaviour beyond bit arithmetic.
//
// Runtime keys are ordered by priority: a larger enumerator wins. The key that
// handles a call is the highest of (tensor keys | TLS included) - TLS excluded,
// restricted to the keys the operator does not fall through.
enum class DispatchKey : uint8_t {
  Undefined = 0,
  CPU,
  CUDA,
  DynamicLayerBack,
  BackendSelect,
  AutogradCPU,
  AutogradCUDA,
  Functionalize,
  Batched,
  Mode,  // dispatch modes and trace: objects that see every call
  DynamicLayerFront,
  EndOfRuntimeKeys,
  // Alias keys name sets of runtime keys; they exist only at registration time.
  CompositeImplicitAutograd = EndOfRuntimeKeys,
  CompositeExplicitAutograd,
  Autograd,
  EndOfKeys,
};

inline constexpr int kNumRuntimeKeys = static_cast<int>(DispatchKey::EndOfRuntimeKeys);
inline constexpr int kNumKeys = static_cast<int>(DispatchKey::EndOfKeys);

constexpr bool is_alias_key(DispatchKey k) { return k >= DispatchKey::EndOfRuntimeKeys; }
constexpr bool is_backend_key(DispatchKey k) {
  return k == DispatchKey::CPU || k == DispatchKey::CUDA;
}
constexpr bool is_autograd_key(DispatchKey k) {
  return k == DispatchKey::AutogradCPU || k == DispatchKey::AutogradCUDA;
}

const char* to_string(DispatchKey k);
std::ostream& operator<<(std::ostream& out, DispatchKey k);

// A set of runtime keys as a 64-bit mask: bit i is the key with enumerator i.
class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k)
      : bits_(k == DispatchKey::Undefined ? 0 : uint64_t{1} << static_cast<int>(k)) {}
  constexpr DispatchKeySet(std::initializer_list<DispatchKey> keys) {
    for (DispatchKey k : keys) bits_ |= DispatchKeySet(k).bits_;
  }
  static constexpr DispatchKeySet from_bits(uint64_t bits) {
    DispatchKeySet s;
    s.bits_ = bits;
    return s;
  }
  // All runtime keys of strictly lower priority than k: where a kernel at k
  // redispatches to.
  static constexpr DispatchKeySet below(DispatchKey k) {
    return from_bits(((uint64_t{1} << static_cast<int>(k)) - 1) & ~uint64_t{1});
  }
  static constexpr DispatchKeySet full() {
    return from_bits(((uint64_t{1} << kNumRuntimeKeys) - 1) & ~uint64_t{1});
  }

  constexpr uint64_t bits() const { return bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool has(DispatchKey k) const { return (bits_ & DispatchKeySet(k).bits_) != 0; }
  constexpr DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return *this - DispatchKeySet(k); }

  // The highest-priority key, or Undefined for the empty set.
  constexpr DispatchKey highest() const {
    return bits_ == 0 ? DispatchKey::Undefined
                      : static_cast<DispatchKey>(63 - __builtin_clzll(bits_));
  }

  friend constexpr DispatchKeySet operator|(DispatchKeySet a, DispatchKeySet b) {
    return from_bits(a.bits_ | b.bits_);
  }
  friend constexpr DispatchKeySet operator&(DispatchKeySet a, DispatchKeySet b) {
    return from_bits(a.bits_ & b.bits_);
  }
  friend constexpr DispatchKeySet operator-(DispatchKeySet a, DispatchKeySet b) {
    return from_bits(a.bits_ & ~b.bits_);
  }
  friend constexpr bool operator==(DispatchKeySet a, DispatchKeySet b) {
    return a.bits_ == b.bits_;
  }
  DispatchKeySet& operator|=(DispatchKeySet o) {
    bits_ |= o.bits_;
    return *this;
  }

  // Iterates keys from highest to lowest priority.
  template <class F>
  void for_each_key(F&& f) const {
    for (uint64_t b = bits_; b != 0;) {
      int i = 63 - __builtin_clzll(b);
      f(static_cast<DispatchKey>(i));
      b &= ~(uint64_t{1} << i);
    }
  }

 private:
  uint64_t bits_ = 0;
};

std::ostream& operator<<(std::ostream& out, DispatchKeySet s);

constexpr DispatchKey autograd_key_for_backend(DispatchKey backend) {
  return backend == DispatchKey::CUDA ? DispatchKey::AutogradCUDA : DispatchKey::AutogradCPU;
}

}  // namespace strata
