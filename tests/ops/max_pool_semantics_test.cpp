// max_pool2d's documented choices, on each of its loops (Note [Pooling 2 x 2
// windows], kernels/cpu/pool.cpp): of equal values the first in the window's
// row-major order wins, and NaN counts as the maximum. The op table checks values
// and indices against a loop on distinct values, which cannot see either choice.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "strata/strata.h"

namespace st = strata;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// One 2 x 4 plane: window (0, 0) holds a tie of 5s at pixels 1 and 4, window
// (0, 1) a NaN at pixel 6 beside larger numbers.
st::Tensor plane() {
  return st::tensor(std::vector<float>{1, 5, 9, 2, 5, 3, kNaN, 7}, {1, 1, 2, 4});
}

struct Pooled {
  std::vector<float> values;
  std::vector<int64_t> indices;
};

Pooled pool(const st::Tensor& input, std::vector<int64_t> stride,
            std::vector<int64_t> padding = {0}) {
  auto [values, indices] = st::nn::max_pool2d_with_indices(input, {2, 2}, stride, padding);
  return {values.to_vector<float>(), indices.to_vector<int64_t>()};
}

// Window `tie` of got is the one holding the tied 5s, window `nan` the one holding
// the NaN.
void expect_first_tie_and_nan(const Pooled& got, size_t tie, size_t nan) {
  EXPECT_EQ(got.values[tie], 5.0f);
  EXPECT_EQ(got.indices[tie], 1);
  EXPECT_TRUE(std::isnan(got.values[nan]));
  EXPECT_EQ(got.indices[nan], 6);
}

// Unpadded 2 x 2 windows: the loop of their own, at stride 2 and at stride 1
// (whose windows 0 and 2 are stride 2's windows 0 and 1).
TEST(MaxPoolSemantics, TwoByTwoKeepsTheFirstTieAndTakesNaN) {
  const Pooled got = pool(plane(), {2, 2});
  ASSERT_EQ(got.values.size(), 2u);
  expect_first_tie_and_nan(got, 0, 1);
  const Pooled overlapping = pool(plane(), {1, 1});
  ASSERT_EQ(overlapping.values.size(), 3u);
  expect_first_tie_and_nan(overlapping, 0, 2);
}

// A 2 x 40 plane: 20 windows at stride 2, more than one vector of them (Note
// [Pooling rows of 2 x 2 windows in vectors]); window 17 holds the tie (pixels 35
// and 74), window 18 the NaN (pixel 76), the others zeros.
TEST(MaxPoolSemantics, VectorRowsKeepTheFirstTieAndTakeNaN) {
  std::vector<float> pixels(80, 0.0f);
  pixels[34] = 1, pixels[35] = 5, pixels[74] = 5, pixels[75] = 3;  // window 17
  pixels[36] = 9, pixels[37] = 2, pixels[76] = kNaN, pixels[77] = 7;  // window 18
  const Pooled got = pool(st::tensor(pixels, {1, 1, 2, 40}), {2, 2});
  ASSERT_EQ(got.values.size(), 20u);
  EXPECT_EQ(got.values[17], 5.0f);
  EXPECT_EQ(got.indices[17], 35);
  EXPECT_TRUE(std::isnan(got.values[18]));
  EXPECT_EQ(got.indices[18], 76);
  EXPECT_EQ(got.indices[19], 38);  // all zeros: the first pixel
}

// Padding takes the general loop: on the [3, 5] outputs of stride 1 and padding
// 1, windows (1, 1) and (1, 3) cover the same pixels as stride 2's two windows.
TEST(MaxPoolSemantics, GeneralLoopMakesTheSameChoices) {
  const Pooled got = pool(plane(), {1, 1}, {1, 1});
  ASSERT_EQ(got.values.size(), 15u);
  expect_first_tie_and_nan(got, 6, 8);
}

}  // namespace
