// Bad input to the creation and random operators: each case throws strata::Error
// whose message names the operator and what was wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;

namespace {

using strata::testing::error_message;
using strata::testing::expect_contains;

TEST(CreationErrors, RandnRejectsIntegerDtype) {
  st::Generator gen(1);
  expect_contains(error_message([&] {
                    st::randn({2, 3}, gen, st::kInt64);
                  }),
                  {"[strata::randn]", "floating-point dtype", "Int64", "[2, 3]"});
  expect_contains(error_message([] { st::randn({4}, st::kBool); }), {"[strata::randn]", "Bool"});
}

TEST(CreationErrors, RandRejectsIntegerDtype) {
  st::Generator gen(1);
  expect_contains(error_message([&] { st::rand({5}, gen, st::kInt64); }),
                  {"[strata::rand]", "floating-point dtype", "Int64", "[5]"});
  expect_contains(error_message([] { st::rand({}, st::kInt64); }), {"[strata::rand]", "Int64"});
}

TEST(CreationErrors, RejectedRandomCallLeavesGeneratorUntouched) {
  st::Generator gen(1);
  error_message([&] { st::randn({8}, gen, st::kInt64); });
  EXPECT_EQ(gen.offset(), 0u);
}

TEST(CreationErrors, ArangeStepZero) {
  expect_contains(error_message([] { st::arange(0, 10, 0); }),
                  {"[strata::arange]", "step must be nonzero", "start=0", "end=10"});
  expect_contains(error_message([] { st::arange(0.0, 1.0, 0.0); }),
                  {"[strata::arange]", "step must be nonzero"});
}

TEST(CreationErrors, ArangeStepOfWrongSign) {
  expect_contains(error_message([] { st::arange(0, 10, -1); }),
                  {"[strata::arange]", "negative step (-1)", "start=0", "end=10"});
  expect_contains(error_message([] { st::arange(5.0, 1.0, 0.5); }),
                  {"[strata::arange]", "positive step (0.5)", "start=5", "end=1"});
  // end < start with the default step of 1.
  expect_contains(error_message([] { st::arange(-3); }), {"[strata::arange]", "positive step"});
}

TEST(CreationErrors, ArangeNonFiniteBounds) {
  const double inf = std::numeric_limits<double>::infinity();
  expect_contains(error_message([&] { st::arange(0.0, inf, 1.0); }),
                  {"[strata::arange]", "finite"});
  expect_contains(error_message([] { st::arange(0.0, std::nan(""), 1.0); }),
                  {"[strata::arange]", "finite"});
}

TEST(CreationErrors, ArangeBoolDtype) {
  expect_contains(error_message([] { st::arange(3, st::kBool); }),
                  {"[strata::arange]", "numeric dtype", "Bool"});
}

TEST(CreationErrors, LinspaceNegativeSteps) {
  expect_contains(error_message([] { st::linspace(0.0, 1.0, -1); }),
                  {"[strata::linspace]", "non-negative", "-1"});
}

TEST(CreationErrors, RandintHighNotAboveLow) {
  st::Generator gen(3);
  expect_contains(error_message([&] { st::randint(5, 5, {3}, gen); }),
                  {"[strata::randint]", "high (5)", "greater than low (5)"});
  expect_contains(error_message([&] { st::randint(2, -4, {3}, gen); }),
                  {"[strata::randint]", "high (-4)", "low (2)"});
  EXPECT_EQ(gen.offset(), 0u);
}

TEST(CreationErrors, EyeNegativeSize) {
  expect_contains(error_message([] { st::eye(-1); }), {"[strata::eye]", "non-negative", "n=-1"});
  expect_contains(error_message([] { st::eye(2, -3); }), {"[strata::eye]", "m=-3"});
}

TEST(CreationErrors, BernoulliProbabilityOutsideUnitInterval) {
  st::Generator gen(4);
  expect_contains(error_message([&] {
                    st::bernoulli(st::tensor({0.2, 1.5, 0.3}), gen);
                  }),
                  {"[strata::bernoulli]", "[0, 1]", "[3]"});
  expect_contains(error_message([&] { st::bernoulli(st::tensor({-0.1}), gen); }),
                  {"[strata::bernoulli]", "[0, 1]"});
  expect_contains(error_message([&] { st::bernoulli(st::tensor({std::nan("")}), gen); }),
                  {"[strata::bernoulli]", "NaN"});
  EXPECT_EQ(gen.offset(), 0u);
}

TEST(CreationErrors, BernoulliIntegerProbabilities) {
  st::Generator gen(4);
  expect_contains(error_message([&] {
                    st::bernoulli(st::tensor(std::vector<int64_t>{0, 1}), gen);
                  }),
                  {"[strata::bernoulli]", "floating-point", "Int64"});
}

TEST(CreationErrors, NormalNegativeStdAndBadShapes) {
  st::Generator gen(5);
  expect_contains(error_message([&] {
                    st::normal(st::zeros({3}), st::tensor(std::vector<float>{1, -1, 1}), gen);
                  }),
                  {"[strata::normal]", ">= 0"});
  expect_contains(error_message([&] { st::normal(st::zeros({3}), st::ones({4}), gen); }),
                  {"[strata::normal]", "[3]", "[4]"});
  expect_contains(error_message([&] {
                    st::normal(st::zeros({2}, st::kInt64), st::ones({2}, st::kInt64), gen);
                  }),
                  {"[strata::normal]", "floating-point", "Int64"});
}

TEST(CreationErrors, FullLikeFloatValueIntoIntegerTensor) {
  expect_contains(error_message([] {
                    st::full_like(st::zeros({2, 2}, st::kInt64), 1.5);
                  }),
                  {"[strata::full_like]", "Int64", "1.5", "[2, 2]"});
}

}  // namespace
