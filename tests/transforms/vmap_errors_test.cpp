// Bad input to vmap gives a strata::Error naming the op, the sizes and the
// level, and leaves the layer stack and the thread-local key sets as they were.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::error_message;
using testing::expect_contains;

class VmapErrors : public testing::TransformStateRestored {};

Tensor identity(const Tensor& x) { return x; }
Tensor add(const Tensor& x, const Tensor& y) { return x + y; }

TEST_F(VmapErrors, InDimsSizesThatDisagree) {
  const std::string m = error_message([] { vmap (&add)(zeros({3, 2}), zeros({2, 4})); });
  expect_contains(m, {"vmap", "batch sizes disagree", "argument 0 (shape [3, 2], in_dim 0)",
                      "argument 1 (shape [2, 4], in_dim 0)", "batch size 2"});
}

TEST_F(VmapErrors, InDimsSizesThatDisagreeInsideGrad) {
  auto f = [](const Tensor& x) { return vmap(&add)(x, zeros({4})).sum(); };
  const std::string m = error_message([&] { grad(f)(ones({3}, kFloat64)); });
  expect_contains(m, {"vmap inside grad(level", "batch sizes disagree"});
}

TEST_F(VmapErrors, InDimOutOfRange) {
  const std::string m = error_message([] { vmap(&identity, {.in_dims = {2}})(zeros({3, 2})); });
  expect_contains(m, {"vmap", "in_dim 2 of argument 0 (shape [3, 2])", "out of range", "rank 2"});
  const std::string negative = error_message([] {
    vmap(&identity, {.in_dims = {-3}})(zeros({3, 2}));
  });
  expect_contains(negative, {"in_dim -3", "out of range"});
}

TEST_F(VmapErrors, InDimsWithTheWrongCount) {
  const std::string m = error_message([] { vmap(&add, {.in_dims = {0}})(zeros({3}), zeros({3})); });
  expect_contains(m, {"vmap", "in_dims has 1 entries", "2 arguments"});
}

TEST_F(VmapErrors, NoBatchedInput) {
  const std::string m = error_message([] {
    vmap(&add, {.in_dims = {none, none}})(zeros({3}), zeros({3}));
  });
  expect_contains(m, {"vmap", "no argument is batched"});
}

TEST_F(VmapErrors, ABatchOfSizeZero) {
  const std::string m = error_message([] { vmap (&identity)(zeros({0, 2})); });
  expect_contains(m, {"vmap", "the batch is empty", "shape [0, 2]"});
}

TEST_F(VmapErrors, InPlaceWriteOfABatchedValueIntoAnUnbatchedTensor) {
  auto f = [](const Tensor& x) {
    Tensor acc = zeros({2}, kFloat64);
    acc.add_(x);
    return acc;
  };
  const std::string m = error_message([&] { vmap(f)(ones({3, 2}, kFloat64)); });
  expect_contains(m, {"strata::add_", "cannot write a batched value", "vmap(level", "batch size 3",
                      "unbatched tensor of shape [2]", "zeros_like"});
}

TEST_F(VmapErrors, ItemAndToVectorOfABatchedTensor) {
  auto item = [](const Tensor& x) {
    (void)x.sum().item<double>();
    return x;
  };
  expect_contains(error_message([&] {
                    vmap(item)(ones({3, 2}, kFloat64));
                  }),
                  {"Tensor::item", "BatchedTensorImpl", "outside the transform"});
  auto values = [](const Tensor& x) {
    (void)x.to_vector<double>();
    return x;
  };
  expect_contains(error_message([&] {
                    vmap(values)(ones({3, 2}, kFloat64));
                  }),
                  {"Tensor::to_vector", "BatchedTensorImpl", "shape [2]"});
}

TEST_F(VmapErrors, RandomOpWithRandomnessError) {
  auto f = [](const Tensor& x) { return x + randn({2}, Generator(1), kFloat64); };
  const std::string m = error_message([&] { vmap(f)(ones({3, 2}, kFloat64)); });
  expect_contains(m, {"strata::randn", "random", "vmap(level", "batch size 3", "randomness = Error",
                      "Different", "Same"});
}

TEST_F(VmapErrors, OutDimsThatDoNotFit) {
  const std::string none_dim = error_message([] {
    vmap(&identity, {.out_dims = {none}})(ones({3, 2}, kFloat64));
  });
  expect_contains(none_dim, {"vmap", "out_dim none", "batched"});
  const std::string range = error_message([] {
    vmap(&identity, {.out_dims = {3}})(ones({3, 2}, kFloat64));
  });
  expect_contains(range, {"vmap", "out_dim 3", "out of range"});
}

TEST_F(VmapErrors, ABatchedTensorKeptPastItsVmap) {
  Tensor kept;
  auto f = [&](const Tensor& x) {
    kept = x * 2.0;
    return x;
  };
  vmap(f)(ones({3, 2}, kFloat64));
  const std::string m = error_message([&] { (void)(kept + 1.0); });
  expect_contains(m, {"vmap that has already returned"});
}

TEST_F(VmapErrors, AnErrorDeepInsideNestedTransformsUnwindsEverything) {
  auto inner = [](const Tensor& x) { return x.matmul(ones({5, 5}, kFloat64)); };  // [2] x [5, 5]
  auto f = [&](const Tensor& x) { return vmap(inner)(x).sum(); };
  const std::string m = error_message([&] { vmap(grad(f))(ones({4, 3, 2}, kFloat64)); });
  EXPECT_FALSE(m.empty());
}

}  // namespace
}  // namespace strata
