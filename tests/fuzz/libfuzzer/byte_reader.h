#pragma once

// Reads choices from a libFuzzer input: each choice takes the next byte (zero
// once the input is used up), so small mutations of the input make small
// changes to what a target builds.

#include <cstddef>
#include <cstdint>

namespace strata::fuzz {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // A value in [0, n); n > 0. Takes two bytes when n is over 256.
  size_t below(size_t n) {
    const size_t v = n > 256 ? next() << 8 | next() : next();
    return v % n;
  }
  // True with probability about 1/n; false once the input is used up, so the
  // rare choices (an undefined tensor, a wrong type) need bytes that ask for them.
  bool chance(size_t n) { return below(n) == n - 1; }
  template <class T, size_t N>
  const T& pick(const T (&items)[N]) {
    return items[below(N)];
  }

 private:
  size_t next() {
    if (pos_ >= size_) return 0;
    return data_[pos_++];
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace strata::fuzz
