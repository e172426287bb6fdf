// Small helpers of the tests whose expected values are exact (worked out by
// hand in binary-exact numbers): compare with ==, build 1-D and 0-dim tensors.
#pragma once

#include <gtest/gtest.h>
#include <strata/strata.h>

#include <vector>

namespace strata::testing {

inline void expect_values(const Tensor& actual, const std::vector<double>& expected) {
  ASSERT_TRUE(actual.defined());
  EXPECT_EQ(actual.to_vector<double>(), expected);
}

inline Tensor vec(std::vector<double> v) {
  const auto n = static_cast<int64_t>(v.size());
  return tensor(v, {n});
}

inline Tensor num(double v) { return tensor({v}, {}); }

}  // namespace strata::testing
