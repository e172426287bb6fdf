// Bad input to the matrix products: each case throws strata::Error naming the op
// and what was wrong. Mixed dtypes are an error (as in PyTorch), not promoted.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <functional>
#include <utility>
#include <vector>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::error_message;
using testing::expect_contains;

TEST(LinalgErrors, MmInnerSizesDiffer) {
  const std::string message = error_message([] { mm(zeros({2, 3}), zeros({4, 5})); });
  expect_contains(message, {"[strata::mm]", "[2, 3]", "[4, 5]", "inner sizes 3 and 4 differ"});
}

TEST(LinalgErrors, MmNeedsMatrices) {
  expect_contains(error_message([] {
                    mm(zeros({2, 3, 4}), zeros({4, 5}));
                  }),
                  {"[strata::mm]", "expected 2-D tensors", "[2, 3, 4]", "[4, 5]"});
  expect_contains(error_message([] {
                    mm(zeros({3}), zeros({3, 2}));
                  }),
                  {"[strata::mm]", "expected 2-D tensors", "[3]"});
  expect_contains(error_message([] {
                    zeros({2, 2}).mm(zeros({}));
                  }),
                  {"[strata::mm]", "expected 2-D tensors", "[]"});
}

TEST(LinalgErrors, BmmInnerSizesDiffer) {
  expect_contains(error_message([] {
                    bmm(zeros({2, 3, 4}), zeros({2, 5, 6}));
                  }),
                  {"[strata::bmm]", "[2, 3, 4]", "[2, 5, 6]", "inner sizes 4 and 5 differ"});
}

TEST(LinalgErrors, BmmBatchMismatch) {
  expect_contains(error_message([] {
                    bmm(zeros({2, 3, 4}), zeros({3, 4, 5}));
                  }),
                  {"[strata::bmm]", "batch sizes 2 and 3 differ", "[2, 3, 4]", "[3, 4, 5]"});
  expect_contains(error_message([] {
                    bmm(zeros({3, 4}), zeros({4, 5}));
                  }),
                  {"[strata::bmm]", "expected 3-D tensors"});
}

TEST(LinalgErrors, MatmulInnerSizesDiffer) {
  expect_contains(error_message([] {
                    matmul(zeros({2, 5, 3}), zeros({4, 6}));
                  }),
                  {"[strata::matmul]", "[2, 5, 3]", "[4, 6]", "inner sizes 3 and 4 differ"});
  expect_contains(error_message([] { zeros({3}).matmul(zeros({4})); }),
                  {"[strata::matmul]", "[3] and [4]", "inner sizes 3 and 4 differ"});
  expect_contains(error_message([] {
                    matmul(zeros({2, 3}), zeros({2}));
                  }),
                  {"[strata::matmul]", "[2, 3] and [2]"});
}

TEST(LinalgErrors, MatmulBatchDimsDoNotBroadcast) {
  expect_contains(error_message([] {
                    matmul(zeros({2, 3, 4}), zeros({3, 4, 5}));
                  }),
                  {"[strata::matmul]", "[2]", "[3]"});
}

TEST(LinalgErrors, MatmulOfZeroDimTensor) {
  expect_contains(error_message([] { matmul(zeros({}), zeros({3})); }),
                  {"[strata::matmul]", "at least 1 dim", "[] and [3]"});
}

TEST(LinalgErrors, DotLengthsDiffer) {
  expect_contains(error_message([] { dot(zeros({3}), zeros({4})); }),
                  {"[strata::dot]", "[3] and [4]", "lengths 3 and 4 differ"});
  expect_contains(error_message([] {
                    dot(zeros({3, 1}), zeros({3}));
                  }),
                  {"[strata::dot]", "expected 1-D tensors"});
}

TEST(LinalgErrors, OuterNeedsVectors) {
  expect_contains(error_message([] {
                    outer(zeros({3, 1}), zeros({3}));
                  }),
                  {"[strata::outer]", "expected 1-D tensors", "[3, 1]"});
}

TEST(LinalgErrors, AddmmSelfDoesNotBroadcast) {
  expect_contains(error_message([] {
                    addmm(zeros({4}), zeros({2, 3}), zeros({3, 5}));
                  }),
                  {"[strata::addmm]", "[4]", "[2, 5]"});
  expect_contains(error_message([] {
                    addmm(zeros({2, 5}), zeros({2, 3}), zeros({4, 5}));
                  }),
                  {"[strata::addmm]", "inner sizes 3 and 4 differ"});
}

TEST(LinalgErrors, AddmmFloatingScalarsWithIntegerOperands) {
  const Tensor i = zeros({2, 2}, kInt64);
  expect_contains(error_message([&] { addmm(i, i, i, 0.5, 1); }),
                  {"[strata::addmm]", "beta 0.5", "must be integers", "Int64"});
}

TEST(LinalgErrors, DtypeMismatchIsAnError) {
  const Tensor f1 = zeros({2}, kFloat32);
  const Tensor d1 = zeros({2}, kFloat64);
  const Tensor f2 = zeros({2, 2}, kFloat32);
  const Tensor d2 = zeros({2, 2}, kFloat64);
  const Tensor f3 = zeros({1, 2, 2}, kFloat32);
  const Tensor d3 = zeros({1, 2, 2}, kFloat64);
  const std::vector<std::pair<const char*, std::function<void()>>> calls{
      {"[strata::mm]", [&] { mm(f2, d2); }},
      {"[strata::bmm]", [&] { bmm(f3, d3); }},
      {"[strata::matmul]", [&] { matmul(f3, d2); }},
      {"[strata::addmm]", [&] { addmm(d2, f2, f2); }},
      {"[strata::dot]", [&] { dot(f1, d1); }},
      {"[strata::outer]", [&] { outer(f1, d1); }},
      {"[strata::einsum]",
       [&] {
         einsum("ij,jk->ik", {f2, d2});
       }},
  };
  for (const auto& [op, call] : calls) {
    SCOPED_TRACE(op);
    expect_contains(error_message(call),
                    {op, "expected operands of one dtype", "Float32", "Float64"});
  }
}

TEST(LinalgErrors, BoolOperandsAreRejected) {
  const Tensor b = zeros({2, 2}, kBool);
  expect_contains(error_message([&] { mm(b, b); }), {"[strata::mm]", "unsupported dtype Bool"});
}

TEST(LinalgErrors, EinsumMalformedEquation) {
  const Tensor a = zeros({2, 3});
  expect_contains(error_message([&] { einsum("i.j->ij", {a}); }),
                  {"[strata::einsum]", "malformed equation 'i.j->ij'", "unexpected '.'"});
  expect_contains(error_message([&] { einsum("ij->i->j", {a}); }),
                  {"[strata::einsum]", "malformed equation", "unexpected '-'"});
  expect_contains(error_message([&] { einsum("i...", {a}); }),
                  {"[strata::einsum]", "ellipsis is not supported"});
  expect_contains(error_message([&] { einsum("ij->ik", {a}); }),
                  {"[strata::einsum]", "output subscript 'k'", "does not appear"});
  expect_contains(error_message([&] { einsum("ij->ii", {a}); }),
                  {"[strata::einsum]", "output subscript 'i'", "more than once"});
}

TEST(LinalgErrors, EinsumOperandCountMismatch) {
  const Tensor a = zeros({2, 3});
  expect_contains(error_message([&] { einsum("ij,jk->ik", {a}); }),
                  {"[strata::einsum]", "'ij,jk->ik' has 2 operand subscripts but 1 tensors"});
  expect_contains(error_message([&] {
                    einsum("ij->ij", {a, a});
                  }),
                  {"[strata::einsum]", "1 operand subscripts but 2 tensors"});
  expect_contains(error_message([&] { einsum("i", {}); }),
                  {"[strata::einsum]", "1 operand subscripts but 0 tensors"});
  expect_contains(error_message([&] { einsum("ijk->i", {a}); }),
                  {"[strata::einsum]", "operand 0 of shape [2, 3] has 2 dims", "'ijk'"});
}

TEST(LinalgErrors, EinsumSubscriptSizesDisagree) {
  expect_contains(error_message([] {
                    einsum("ij,jk->ik", {zeros({2, 3}), zeros({4, 5})});
                  }),
                  {"[strata::einsum]", "subscript 'j'", "size 3 in operand 0 (shape [2, 3])",
                   "size 4 in operand 1 (shape [4, 5])"});
  expect_contains(error_message([] {
                    einsum("ii->i", {zeros({2, 3})});
                  }),
                  {"[strata::einsum]", "subscript 'i'", "size 2", "size 3"});
}

}  // namespace
}  // namespace strata
