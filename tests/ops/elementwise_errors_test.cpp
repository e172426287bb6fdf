// Bad input to the elementwise operators: each case throws strata::Error naming
// the operator and what it was given.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include "ops/elementwise_backward.h"
#include "tensor/shape_inference.h"
#include "tests/test_support.h"

namespace st = strata;
using st::testing::error_message;
using st::testing::expect_contains;

namespace {

st::Tensor int_tensor(st::IntArrayRef shape) { return st::zeros(shape, st::kInt64); }
st::Tensor float_tensor(st::IntArrayRef shape) { return st::ones(shape, st::kFloat32); }

TEST(ElementwiseErrors, NonBroadcastableShapesNameBothShapesAndTheOp) {
  const st::Tensor a = float_tensor({2, 3});
  const st::Tensor b = float_tensor({4});
  expect_contains(error_message([&] { st::add(a, b); }), {"strata::add", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { a - b; }), {"strata::sub", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { a / b; }), {"strata::div", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { st::pow(a, b); }), {"strata::pow", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { st::maximum(a, b); }), {"strata::maximum", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { a < b; }), {"strata::lt", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { a&& b; }), {"strata::logical_and", "[2, 3]", "[4]"});
  const st::Tensor condition = st::zeros({2, 3}, st::kBool);
  expect_contains(error_message([&] { st::where(condition, a, b); }),
                  {"strata::where", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { st::where(st::zeros({5}, st::kBool), a, a); }),
                  {"strata::where", "[5]", "[2, 3]"});
  expect_contains(error_message([&] { st::addcmul(a, a, b); }),
                  {"strata::addcmul", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { st::mul_add(a, a, a, b); }),
                  {"strata::mul_add", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { st::relu_backward(a, b); }),
                  {"strata::relu_backward", "[2, 3]", "[4]"});
}

TEST(ElementwiseErrors, WhereNeedsABoolCondition) {
  const st::Tensor x = float_tensor({3});
  expect_contains(error_message([&] { st::where(x, x, x); }), {"strata::where", "Bool", "Float32"});
  expect_contains(error_message([&] { st::where(int_tensor({3}), x, x); }),
                  {"strata::where", "Bool", "Int64"});
}

TEST(ElementwiseErrors, InPlaceResultMustCastToSelfsDtype) {
  const st::Tensor i = int_tensor({3});
  const st::Tensor f = float_tensor({3});
  const uint32_t version = i.version();
  expect_contains(error_message([&] { i.add_(f); }), {"strata::add_", "Float32", "Int64"});
  expect_contains(error_message([&] { i.sub_(f); }), {"strata::sub_", "Float32", "Int64"});
  expect_contains(error_message([&] { i.mul_(st::tensor({2.0}, {})); }),
                  {"strata::mul_", "Float64", "Int64"});
  // True division of integers is Float32, even for two Int64 tensors.
  expect_contains(error_message([&] { i.div_(i); }), {"strata::div_", "Float32", "Int64"});
  expect_contains(error_message([&] { i.clamp_(0.5); }), {"strata::clamp_", "Float32", "Int64"});
  // Floating math cannot write into an integer or Bool self; integer math can.
  expect_contains(error_message([&] { i.exp_(); }), {"strata::exp_", "Float32", "Int64"});
  expect_contains(error_message([&] { i.sin_(); }), {"strata::sin_", "Float32", "Int64"});
  expect_contains(error_message([&] { st::zeros({3}, st::kBool).tanh_(); }),
                  {"strata::tanh_", "Float32", "Bool"});
  expect_contains(error_message([&] { st::zeros({3}, st::kBool).neg_(); }),
                  {"strata::neg_", "Bool"});
  const st::Tensor b = st::zeros({3}, st::kBool);
  expect_contains(error_message([&] { b.add_(i); }), {"strata::add_", "Int64", "Bool"});
  EXPECT_EQ(i.version(), version) << "a failed in-place op must not write";
}

TEST(ElementwiseErrors, InPlaceResultMustFitSelfsShape) {
  const st::Tensor self = float_tensor({3});
  const st::Tensor other = float_tensor({2, 3});
  expect_contains(error_message([&] { self.sub_(other); }), {"strata::sub_", "[3]", "[2, 3]"});
  expect_contains(error_message([&] { self.div_(other); }), {"strata::div_", "[3]", "[2, 3]"});
}

TEST(ElementwiseErrors, FloatAlphaNeedsAFloatingResult) {
  const st::Tensor i = int_tensor({3});
  expect_contains(error_message([&] { st::add(i, i, 0.5); }),
                  {"strata::add", "alpha", "0.5", "Int64"});
  expect_contains(error_message([&] { st::sub(i, i, 1.5); }),
                  {"strata::sub", "alpha", "1.5", "Int64"});
  expect_contains(error_message([&] { i.sub_(i, 2.5); }), {"strata::sub_", "alpha", "Int64"});
  expect_contains(error_message([&] { st::addcmul(i, i, i, 0.5); }),
                  {"strata::addcmul", "value", "0.5", "Int64"});
  // A float alpha is fine once a float operand makes the result floating.
  EXPECT_EQ(st::add(i, float_tensor({3}), 0.5).dtype(), st::kFloat32);
}

TEST(ElementwiseErrors, LogicalOpsTakeAnyDtypes) {
  const std::vector<st::Tensor> tensors{st::zeros({2}, st::kBool), int_tensor({2}),
                                        float_tensor({2}), st::ones({2}, st::kFloat64)};
  for (const st::Tensor& a : tensors) {
    EXPECT_EQ((!a).dtype(), st::kBool);
    for (const st::Tensor& b : tensors) {
      EXPECT_EQ((a && b).dtype(), st::kBool) << a.dtype() << " && " << b.dtype();
      EXPECT_EQ((a || b).dtype(), st::kBool) << a.dtype() << " || " << b.dtype();
      EXPECT_EQ((a == b).dtype(), st::kBool) << a.dtype() << " == " << b.dtype();
    }
  }
}

TEST(ElementwiseErrors, ArithmeticWithoutBoolMeaningRejectsBool) {
  const st::Tensor b = st::zeros({2}, st::kBool);
  expect_contains(error_message([&] { b - b; }), {"strata::sub", "Bool"});
  expect_contains(error_message([&] { -b; }), {"strata::neg", "Bool"});
  expect_contains(error_message([&] { b.abs(); }), {"strata::abs", "Bool"});
  expect_contains(error_message([&] { b.relu_(); }), {"strata::relu_", "Bool"});
  expect_contains(error_message([&] { st::pow(b, b); }), {"strata::pow", "Bool"});
  expect_contains(error_message([&] { st::addcmul(b, b, b); }), {"strata::addcmul", "Bool"});
  expect_contains(error_message([&] { st::mul_add(b, b, b, b); }), {"strata::mul_add", "Bool"});
  expect_contains(error_message([&] { st::relu_backward(b, b); }),
                  {"strata::relu_backward", "Bool"});
  expect_contains(error_message([&] { b.clamp(false, true); }), {"strata::clamp", "Bool"});
}

TEST(ElementwiseErrors, ScalarArgumentsAreChecked) {
  const st::Tensor i = int_tensor({2});
  expect_contains(error_message([&] { i.pow(-1); }), {"strata::pow", "negative", "Int64", "-1"});
  expect_contains(error_message([&] { i.clamp(std::nullopt, std::nullopt); }),
                  {"strata::clamp", "min", "max"});
  static const auto gelu = st::Dispatcher::singleton()
                               .findSchemaOrThrow("strata::gelu", "")
                               .typed<st::Tensor(const st::Tensor&, std::string_view)>();
  expect_contains(error_message([&] { gelu.call(float_tensor({2}), "fast"); }),
                  {"strata::gelu", "'fast'", "'none'", "'tanh'"});
}

}  // namespace
