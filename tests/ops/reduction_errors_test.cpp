// Bad input to the reductions: each throws strata::Error naming the op and what
// was wrong, and leaves nothing half-done.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;

namespace {

using strata::testing::error_message;
using strata::testing::expect_contains;

TEST(ReductionErrors, DimOutOfRangeNamesOpDimAndRank) {
  const st::Tensor x = st::zeros({2, 3});
  expect_contains(error_message([&] { x.sum({2}); }), {"strata::sum", "dim 2", "rank 2"});
  expect_contains(error_message([&] {
                    x.mean({0, -3}, true);
                  }),
                  {"strata::mean", "dim -3", "rank 2"});
  expect_contains(error_message([&] { x.amax({5}); }), {"strata::amax", "dim 5", "rank 2"});
  expect_contains(error_message([&] { x.max(2); }), {"strata::max", "dim 2", "rank 2"});
  expect_contains(error_message([&] { x.argmin(-3); }), {"strata::argmin", "dim -3", "rank 2"});
  expect_contains(error_message([&] { x.prod(7); }), {"strata::prod", "dim 7", "rank 2"});
  expect_contains(error_message([&] { x.var({3}); }), {"strata::var", "dim 3", "rank 2"});
  expect_contains(error_message([&] { x.norm(2, {-4}); }), {"strata::norm", "dim -4", "rank 2"});
  // A 0-dim tensor takes dim 0 and -1 only.
  const st::Tensor scalar = st::zeros({});
  EXPECT_EQ(scalar.sum({0}).dim(), 0);
  expect_contains(error_message([&] { scalar.sum({1}); }), {"strata::sum", "dim 1", "rank 0"});
}

TEST(ReductionErrors, RepeatedDim) {
  const st::Tensor x = st::zeros({2, 3, 4});
  expect_contains(error_message([&] {
                    x.sum({1, -2});
                  }),
                  {"strata::sum", "dim 1", "more than once", "[1, -2]"});
  expect_contains(error_message([&] {
                    x.logsumexp({0, 2, 0});
                  }),
                  {"strata::logsumexp", "dim 0", "more than once"});
  expect_contains(error_message([&] { x.std({2, -1}); }), {"strata::std", "more than once"});
}

TEST(ReductionErrors, FloatingOnlyReductionsRejectIntegers) {
  const st::Tensor ints = st::tensor(std::vector<int64_t>{1, 2, 3, 4}, {2, 2});
  expect_contains(error_message([&] { ints.mean(); }),
                  {"strata::mean", "floating-point", "Int64", "[2, 2]"});
  expect_contains(error_message([&] { ints.mean({1}); }), {"strata::mean", "Int64"});
  expect_contains(error_message([&] { ints.var(); }), {"strata::var", "Int64"});
  expect_contains(error_message([&] { ints.std(); }), {"strata::std", "Int64"});
  expect_contains(error_message([&] { ints.logsumexp({0}); }), {"strata::logsumexp", "Int64"});
  expect_contains(error_message([&] { ints.norm(); }), {"strata::norm", "Int64"});
  // Sums of integers are fine, and Int64.
  EXPECT_EQ(ints.sum().item<int64_t>(), 10);
  EXPECT_EQ(ints.sum().dtype(), st::kInt64);
}

TEST(ReductionErrors, ReductionsWithoutIdentityRejectEmptyInput) {
  const st::Tensor empty = st::zeros({0, 3});
  expect_contains(error_message([&] { empty.amax(); }),
                  {"strata::amax", "zero elements", "[0, 3]"});
  expect_contains(error_message([&] { empty.amin({0}); }),
                  {"strata::amin", "zero elements", "[0, 3]", "dims [0]"});
  expect_contains(error_message([&] { empty.max(); }), {"strata::max", "zero elements"});
  expect_contains(error_message([&] { empty.min(); }), {"strata::min", "zero elements"});
  expect_contains(error_message([&] { empty.max(0); }), {"strata::max", "zero elements"});
  expect_contains(error_message([&] { empty.argmax(); }), {"strata::argmax", "zero elements"});
  expect_contains(error_message([&] { empty.argmin(0); }), {"strata::argmin", "zero elements"});
  expect_contains(error_message([&] { empty.norm(std::numeric_limits<double>::infinity()); }),
                  {"strata::norm", "zero elements"});
  // Over a non-empty dim the groups have values: an empty result, no error.
  EXPECT_EQ(empty.amax({1}).sizes().vec(), std::vector<int64_t>{0});
  EXPECT_EQ(std::get<1>(empty.max(1)).sizes().vec(), std::vector<int64_t>{0});
  // Reductions with an identity give it.
  EXPECT_EQ(empty.sum().item<double>(), 0.0);
  EXPECT_EQ(empty.prod().item<double>(), 1.0);
  EXPECT_TRUE(std::isnan(empty.mean().item<double>()));
  EXPECT_EQ(empty.logsumexp({0}).to_vector<double>(),
            std::vector<double>(3, -std::numeric_limits<double>::infinity()));
}

TEST(ReductionErrors, NormWithUnsupportedOrder) {
  const st::Tensor x = st::ones({2, 3});
  expect_contains(error_message([&] { x.norm(3); }), {"strata::norm", "p=3", "p=1, p=2"});
  expect_contains(error_message([&] { x.norm(0.5, {1}); }), {"strata::norm", "p=0.5"});
  expect_contains(error_message([&] { x.norm(-std::numeric_limits<double>::infinity()); }),
                  {"strata::norm", "p=-inf"});
}

TEST(ReductionErrors, NegativeCorrection) {
  const st::Tensor x = st::ones({4});
  expect_contains(error_message([&] { x.var({}, -1); }), {"strata::var", "correction", "-1"});
}

}  // namespace
