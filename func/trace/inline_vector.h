#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace strata {

// A vector that keeps up to N elements inline, for elements that are not
// trivially copyable (SmallVector's are): a graph node's arguments and results,
// so recording a node allocates nothing of its own.
template <class T, size_t N>
class InlineVector {
 public:
  InlineVector() = default;
  InlineVector(const InlineVector& o) { append_copies(o.begin(), o.end()); }
  template <class It>
  InlineVector(It first, It last) {
    append_copies(first, last);
  }
  InlineVector(InlineVector&& o) noexcept { take(o); }
  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) {
      clear();
      append_copies(o.begin(), o.end());
    }
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      clear();
      free_heap();
      take(o);
    }
    return *this;
  }
  ~InlineVector() {
    clear();
    free_heap();
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  template <class... A>
  T& emplace_back(A&&... args) {
    if (size_ == capacity_) grow(capacity_ * 2);
    T* made = new (data_ + size_) T(std::forward<A>(args)...);
    ++size_;
    return *made;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void clear() {
    for (size_t i = 0; i < size_; ++i) data_[i].~T();
    size_ = 0;
  }

 private:
  T* inline_data() { return reinterpret_cast<T*>(inline_); }
  bool is_inline() const { return data_ == reinterpret_cast<const T*>(inline_); }

  template <class It>
  void append_copies(It first, It last) {
    for (; first != last; ++first) emplace_back(*first);
  }
  // Takes o's elements (moving inline ones, stealing a heap buffer); this is empty.
  void take(InlineVector& o) {
    if (o.is_inline()) {
      for (T& v : o) emplace_back(std::move(v));
      o.clear();
      return;
    }
    data_ = o.data_;
    size_ = o.size_;
    capacity_ = o.capacity_;
    o.data_ = o.inline_data();
    o.size_ = 0;
    o.capacity_ = N;
  }
  void free_heap() {
    if (!is_inline()) ::operator delete(data_);
    data_ = inline_data();
    capacity_ = N;
  }
  void grow(size_t capacity) {
    T* fresh = static_cast<T*>(::operator new(capacity * sizeof(T)));
    for (size_t i = 0; i < size_; ++i) {
      new (fresh + i) T(std::move(data_[i]));
      data_[i].~T();
    }
    if (!is_inline()) ::operator delete(data_);
    data_ = fresh;
    capacity_ = capacity;
  }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* data_ = inline_data();
  size_t size_ = 0;
  size_t capacity_ = N;
};

}  // namespace strata
