// Regression tests for what the fuzzers found (tests/fuzz/README.md): the
// differential fuzzer's wrong values and the libFuzzer targets' crashes. Each
// used to crash or give a wrong value; each now gives the right value or raises
// a strata::Error that says what was wrong.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <tuple>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;
using testing::error_message;
using testing::expect_contains;

class FuzzFindings : public testing::TransformStateRestored {};

// The jvp twin of ProbeDefects.GradOfAnInPlaceWriteIntoAViewOfAnUntrackedClone:
// a dual value written through a view of a clone of a captured (tangent-free)
// tensor; the clone's tangent must follow the write.
TEST_F(FuzzFindings, JvpOfAnInPlaceWriteIntoAViewOfAnUntrackedClone) {
  const Tensor y = arange(6, kFloat64).reshape({2, 3});
  auto f = [&](const Tensor& x) {
    Tensor t = y.clone();
    t.reshape({-1}).mul_(x.reshape({-1}));
    return t;
  };
  const Tensor x = ones({2, 3}, kFloat64);
  const Tensor v = arange(6, kFloat64).reshape({2, 3}) + 1.0;
  const auto [out, tangent] = jvp(f, std::make_tuple(x), std::make_tuple(v));
  EXPECT_TRUE(allclose(out, y));
  EXPECT_TRUE(allclose(tangent, y * v)) << tangent;
}

TEST_F(FuzzFindings, JvpOfAnInPlaceWriteIntoAnUntrackedClone) {
  const Tensor y = arange(6, kFloat64).reshape({2, 3});
  auto f = [&](const Tensor& x) {
    Tensor t = y.clone();
    t.mul_(x);
    return t;
  };
  const Tensor x = ones({2, 3}, kFloat64);
  const Tensor v = arange(6, kFloat64).reshape({2, 3}) + 1.0;
  const auto [out, tangent] = jvp(f, std::make_tuple(x), std::make_tuple(v));
  EXPECT_TRUE(allclose(tangent, y * v)) << tangent;
}

}  // namespace
}  // namespace strata
