// Bad input to jvp and linearize: each error names the transform, the shapes or
// dtypes, and the level, and leaves the layer stack and key sets as they were.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <vector>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::error_message;
using testing::expect_contains;

class JvpErrors : public testing::TransformStateRestored {};

Tensor square_sum(const Tensor& x) { return (x * x).sum(); }

TEST_F(JvpErrors, TangentOfTheWrongShape) {
  const std::string m = error_message([] {
    jvp(&square_sum, std::tuple{zeros({2, 3})}, std::tuple{zeros({3, 2})});
  });
  expect_contains(m, {"jvp", "tangent of primal argument 0", "[3, 2]", "[2, 3]", "level"});
}

TEST_F(JvpErrors, TangentOfTheWrongDtype) {
  const std::string m = error_message(
      [] { jvp(&square_sum, std::tuple{zeros({2}, kFloat64)}, std::tuple{zeros({2}, kFloat32)}); });
  expect_contains(m, {"jvp", "Float32", "Float64"});
}

TEST_F(JvpErrors, TreesOfDifferentShapes) {
  auto f = [](const std::vector<Tensor>& xs) { return xs[0].sum(); };
  const std::string m = error_message([&] {
    jvp(f, std::tuple{std::vector<Tensor>{ones({2}), ones({2})}},
        std::tuple{std::vector<Tensor>{ones({2})}});
  });
  expect_contains(
      m, {"jvp", "primal argument 0 holds 2 tensors", "tangent holds 1", "same tree shape"});
}

TEST_F(JvpErrors, IntegerPrimal) {
  const Tensor labels = tensor(std::vector<int64_t>{1, 2}, {2});
  const std::string m = error_message(
      [&] { jvp([](const Tensor& x) { return x; }, std::tuple{labels}, std::tuple{labels}); });
  expect_contains(m, {"jvp", "Int64", "floating-point"});
}

TEST_F(JvpErrors, InPlaceOnACapturedTensor) {
  Tensor captured = zeros({3});
  const std::string m = error_message([&] {
    jvp([&](const Tensor& x) { return captured.add_(x); }, std::tuple{ones({3})},
        std::tuple{ones({3})});
  });
  expect_contains(m, {"add_", "captured from outside jvp level", "Clone"});
}

TEST_F(JvpErrors, ErrorDeepInsideNestedTransforms) {
  const std::string m = error_message([] {
    auto inner = [](const Tensor& x) {
      return jvp(&square_sum, std::tuple{x}, std::tuple{zeros({4})}).second;
    };
    grad(inner)(ones({3}));
  });
  expect_contains(m, {"jvp", "[4]", "[3]"});
}

TEST_F(JvpErrors, LinearizedFunctionWithAWrongTangent) {
  auto [out, jvp_fn] = linearize(&square_sum, ones({3}));
  const std::string m = error_message([&] { jvp_fn(ones({4})); });
  expect_contains(m, {"linearize", "tangent 0", "[4]", "[3]"});
}

}  // namespace
}  // namespace strata
