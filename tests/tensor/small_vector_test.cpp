// Tests of SmallVector's copies: every length, inline or spilled, of elements of
// 1, 2 and 8 bytes copies exactly its elements (the short-copy path picks two
// overlapping fixed-size moves by length, so each length band is a case).
#include "tensor/small_vector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using strata::ArrayRef;
using strata::SmallVector;

template <class T>
std::vector<T> pattern(size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(3 * i + 1);
  return v;
}

template <class T, size_t N>
void check_every_length() {
  for (size_t n = 0; n <= 70; ++n) {
    const std::vector<T> want = pattern<T>(n);
    SmallVector<T, N> fresh{ArrayRef<T>(want.data(), want.size())};
    ASSERT_EQ(fresh.vec(), want) << "length " << n;
    // Assigned over a longer and a shorter vector, which must not keep a tail.
    SmallVector<T, N> over_longer(n + 3, T(99));
    over_longer = fresh;
    ASSERT_EQ(over_longer.vec(), want) << "length " << n;
    SmallVector<T, N> over_shorter(n / 2, T(77));
    over_shorter = fresh;
    ASSERT_EQ(over_shorter.vec(), want) << "length " << n;
  }
}

TEST(SmallVector, CopiesEveryLengthOfEveryElementSize) {
  check_every_length<int64_t, 5>();
  check_every_length<uint16_t, 8>();
  check_every_length<uint8_t, 4>();
}

}  // namespace
