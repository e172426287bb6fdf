#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

#include "tensor/allocator.h"

namespace strata {

// A vector of any element type that keeps up to N elements inside itself and
// moves to a block of the per-thread cache beyond that. The backward node of a
// recorded op holds its edges, arguments and shapes in these: an op with few
// arguments then costs one allocation (the node) instead of one per container.
// Movable, not copyable.
template <class T, size_t N>
class InlineVector {
  static_assert(N > 0);

 public:
  InlineVector() = default;
  explicit InlineVector(size_t n) { resize(n); }
  InlineVector(InlineVector&& other) noexcept { take(other); }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  InlineVector(const InlineVector&) = delete;
  InlineVector& operator=(const InlineVector&) = delete;
  ~InlineVector() { release(); }

  T* data() { return heap_ != nullptr ? heap_ : inline_data(); }
  const T* data() const { return heap_ != nullptr ? heap_ : inline_data(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("InlineVector::at");
    return data()[i];
  }
  T& at(size_t i) { return const_cast<T&>(std::as_const(*this).at(i)); }
  T& back() { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) grow(2 * capacity_);
    T* slot = new (data() + size_) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(T value) { emplace_back(std::move(value)); }
  void resize(size_t n) {
    reserve(n);
    while (size_ < n) emplace_back();
    while (size_ > n) std::destroy_at(data() + --size_);
  }
  void clear() { resize(0); }

 private:
  T* inline_data() { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inline_data() const { return std::launder(reinterpret_cast<const T*>(inline_)); }

  void grow(size_t capacity) {
    T* bigger = static_cast<T*>(cached_host_allocate(capacity * sizeof(T)));
    T* old = data();
    for (size_t i = 0; i < size_; ++i) {
      new (bigger + i) T(std::move(old[i]));
      std::destroy_at(old + i);
    }
    if (heap_ != nullptr) cached_host_deallocate(heap_, capacity_ * sizeof(T));
    heap_ = bigger;
    capacity_ = capacity;
  }

  void release() {
    std::destroy_n(data(), size_);
    if (heap_ != nullptr) cached_host_deallocate(heap_, capacity_ * sizeof(T));
    heap_ = nullptr;
    size_ = 0;
    capacity_ = N;
  }

  // Takes other's elements (its block, or moves them one by one out of its
  // inline storage) and leaves it empty.
  void take(InlineVector& other) {
    if (other.heap_ != nullptr) {
      heap_ = std::exchange(other.heap_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, N);
      return;
    }
    for (size_t i = 0; i < other.size_; ++i) new (inline_data() + i) T(std::move(other[i]));
    size_ = other.size_;
    other.clear();
  }

  size_t size_ = 0;
  size_t capacity_ = N;
  T* heap_ = nullptr;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace strata
