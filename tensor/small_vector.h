#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <vector>

#include "tensor/array_ref.h"

namespace strata {

// A vector of trivially copyable elements that keeps up to N of them inline, so
// the sizes and strides of a tensor of rank <= N cost no allocation.
template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  SmallVector() = default;
  explicit SmallVector(size_t n, T value = T()) { assign_fill(n, value); }
  SmallVector(std::initializer_list<T> list) { assign(list.begin(), list.size()); }
  SmallVector(ArrayRef<T> ref) { assign(ref.data(), ref.size()); }
  SmallVector(const std::vector<T>& v) { assign(v.data(), v.size()); }
  SmallVector(const SmallVector& o) { assign(o.data(), o.size()); }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) take(o);
    return *this;
  }
  ~SmallVector() { free_heap(); }

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

  void push_back(T v) {
    if (size_ == capacity_) grow(capacity_ * 2);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void resize(size_t n, T value = T()) {
    if (n > capacity_) grow(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void insert(size_t pos, T v) {
    push_back(v);
    std::memmove(data_ + pos + 1, data_ + pos, (size_ - 1 - pos) * sizeof(T));
    data_[pos] = v;
  }
  void erase(size_t pos) {
    std::memmove(data_ + pos, data_ + pos + 1, (size_ - 1 - pos) * sizeof(T));
    --size_;
  }
  void clear() { size_ = 0; }

  operator ArrayRef<T>() const { return ArrayRef<T>(data_, size_); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return ArrayRef<T>(a) == ArrayRef<T>(b);
  }

 private:
  bool is_inline() const { return data_ == inline_; }
  // Moves o's elements here: copies inline ones, steals a heap buffer.
  void take(SmallVector& o) {
    if (o.is_inline()) {
      assign(o.data(), o.size());
      return;
    }
    free_heap();
    data_ = o.data_;
    size_ = o.size_;
    capacity_ = o.capacity_;
    o.data_ = o.inline_;
    o.size_ = 0;
    o.capacity_ = N;
  }
  void free_heap() {
    if (!is_inline()) std::free(data_);
  }
  void grow(size_t capacity) {
    T* fresh = static_cast<T*>(std::malloc(capacity * sizeof(T)));
    if (!fresh) throw std::bad_alloc();
    if (size_) std::memcpy(fresh, data_, size_ * sizeof(T));
    free_heap();
    data_ = fresh;
    capacity_ = capacity;
  }
  void assign(const T* src, size_t n) {
    if (n > capacity_) grow(n);
    const size_t bytes = n * sizeof(T);
    if (bytes <= kShortBytes) {
      move_short(data_, src, bytes);
    } else {
      move_long(data_, src, bytes);
    }
    size_ = n;
  }
  // The sizes or strides of a tensor, copied on every op, fit inline: fixed-size
  // copies the compiler inlines rather than a library call, two of them
  // overlapping to cover any length, each loaded before either is stored (src
  // may overlap dst).
  static constexpr size_t kShortBytes = N * sizeof(T) < 64 ? N * sizeof(T) : 64;
  static void move_short(void* dst, const void* src, size_t n) {
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    if (kShortBytes >= 32 && n >= 32) {
      move_two<32>(d, s, n);
    } else if (kShortBytes >= 16 && n >= 16) {
      move_two<16>(d, s, n);
    } else if (kShortBytes >= 8 && n >= 8) {
      move_two<8>(d, s, n);
    } else if (kShortBytes >= 4 && n >= 4) {
      move_two<4>(d, s, n);
    } else if (n > 0) {
      const char first = s[0], middle = s[n / 2], last = s[n - 1];
      d[0] = first;
      d[n / 2] = middle;
      d[n - 1] = last;
    }
  }
  // Longer copies, mostly into a heap buffer grow() made. Out of line: inlined
  // where a caller's elements are inline, GCC warns of copies past them that
  // cannot happen.
  [[gnu::noinline]] static void move_long(void* dst, const void* src, size_t n) {
    std::memmove(dst, src, n);
  }
  // Moves n bytes, K <= n <= 2K, as the first K and the last K.
  template <size_t K>
  static void move_two(char* d, const char* s, size_t n) {
    char head[K], tail[K];
    std::memcpy(head, s, K);
    std::memcpy(tail, s + n - K, K);
    std::memcpy(d, head, K);
    std::memcpy(d + n - K, tail, K);
  }
  void assign_fill(size_t n, T value) {
    if (n > capacity_) grow(n);
    for (size_t i = 0; i < n; ++i) data_[i] = value;
    size_ = n;
  }

  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
  T inline_[N];
};

// Sizes or strides of a tensor; DESIGN.md: inline for up to 5 dims.
using DimVector = SmallVector<int64_t, 5>;

// What the public API accepts as a shape: a brace list `{2, 3}` (`{}` is 0-dim) or a
// std::vector<int64_t>. It owns its elements so it can be stored.
class Shape : public DimVector {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : DimVector(dims) {}
  Shape(const std::vector<int64_t>& dims) : DimVector(dims) {}
  Shape(IntArrayRef dims) : DimVector(dims) {}
  Shape(const DimVector& dims) : DimVector(dims) {}
};

}  // namespace strata
