// Bad input to grad and vjp gives a strata::Error naming the op, the shapes or
// dtypes and the level, and leaves the layer stack and the thread-local key
// sets as they were.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::error_message;
using testing::expect_contains;

// Every test checks that nothing is left behind.
class GradErrors : public testing::TransformStateRestored {};

TEST_F(GradErrors, NonScalarOutput) {
  Tensor x = ones({2, 3}, kFloat64);
  std::string m = error_message([&] { grad([](const Tensor& t) { return t * 2.0; })(x); });
  expect_contains(m, {"grad", "scalar", "[2, 3]", "level"});
}

TEST_F(GradErrors, NonFloatingOutput) {
  Tensor x = ones({2}, kFloat64);
  std::string m = error_message([&] { grad([](const Tensor& t) { return t.sum() > 0.0; })(x); });
  expect_contains(m, {"grad", "floating-point", "Bool"});
}

TEST_F(GradErrors, IntegerInputToDifferentiate) {
  Tensor labels = tensor(std::vector<int64_t>{1, 2}, {2});
  std::string m =
      error_message([&] { grad([](const Tensor& t) { return t.sum().to(kFloat64); })(labels); });
  expect_contains(m, {"grad", "argument 0", "Int64", "floating-point"});
  // Not differentiated, an integer argument is fine.
  Tensor w = ones({3}, kFloat64);
  Tensor g = grad([](const Tensor& v, const Tensor& idx) { return v.index_select(0, idx).sum(); })(
      w, labels);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{0.0, 1.0, 1.0}));
}

TEST_F(GradErrors, VjpCotangentOfTheWrongShapeOrDtype) {
  Tensor x = ones({2, 3}, kFloat64);
  auto [out, vjp_fn] = vjp([](const Tensor& t) { return t.sin(); }, x);
  std::string shape = error_message([&] { vjp_fn(ones({3, 2}, kFloat64)); });
  expect_contains(shape, {"vjp_fn", "cotangent 0", "[3, 2]", "[2, 3]"});
  std::string dtype = error_message([&] { vjp_fn(ones({2, 3}, kFloat32)); });
  expect_contains(dtype, {"vjp_fn", "Float32", "Float64"});
  // Still usable after the errors.
  EXPECT_EQ(std::get<0>(vjp_fn(ones({2, 3}, kFloat64))).sizes(), x.sizes());
}

TEST_F(GradErrors, SavedTensorModifiedInPlace) {
  Tensor x = tensor({0.5, 1.0}, {2});
  std::string m = error_message([&] {
    grad([](const Tensor& t) {
      Tensor y = t * 2.0;
      Tensor z = y.sin();  // sin saves y for its backward pass
      y.mul_(y);
      return z.sum();
    })(x);
  });
  expect_contains(m, {"strata::sin", "argument 'self'", "[2]", "modified by an in-place op",
                      "version", "grad level"});
}

TEST_F(GradErrors, InPlaceOnACapturedTensorThatRequiresGradOutside) {
  Tensor x = tensor({1.0, 2.0}, {2});
  std::string m = error_message([&] {
    grad([](const Tensor& outer) {
      Tensor captured = outer * 1.0;  // requires grad at the outer level
      return grad([&](const Tensor& y) {
               captured.add_(ones({2}, kFloat64));
               return (captured * y).sum();
             })(ones({2}, kFloat64))
          .sum();
    })(x);
  });
  expect_contains(m, {"strata::add_", "in-place", "captured", "requires grad at an outer level"});
}

TEST_F(GradErrors, InPlaceWriteOfADifferentiatedValueIntoACapturedConstant) {
  Tensor buffer = zeros({2}, kFloat64);
  Tensor x = tensor({1.0, 2.0}, {2});
  std::string m = error_message([&] {
    grad([&](const Tensor& t) {
      buffer.copy_(t);
      return buffer.sum();
    })(x);
  });
  expect_contains(m, {"strata::copy_", "captured", "Clone"});
  // Mutating a captured constant with constants is allowed.
  grad([&](const Tensor& t) {
    buffer.fill_(3.0);
    return (t * buffer).sum();
  })(x);
  EXPECT_EQ(buffer.to_vector<double>(), (std::vector<double>{3.0, 3.0}));
}

TEST_F(GradErrors, InPlaceThroughAViewOfACapturedTensor) {
  // A write through a view of a tensor from outside the transform is refused
  // like a direct write to it (a write through a view of a tensor made inside is
  // supported: tests/transforms/inplace_view_test.cpp).
  Tensor captured = zeros({2, 2}, kFloat64);
  std::string m = error_message([&] {
    grad([&](const Tensor& t) {
      captured.select(0, 0).mul_(t);
      return captured.sum();
    })(ones({2}, kFloat64));
  });
  expect_contains(m, {"strata::mul_", "a view of a tensor captured from outside grad level"});
}

TEST_F(GradErrors, ExceptionsInsideNestedTransformsUnwindEverything) {
  Tensor x = ones({3}, kFloat64);
  std::string m = error_message([&] {
    grad([](const Tensor& t) {
      return grad([&](const Tensor& u) { return (u + ones({4}, kFloat64)).sum(); })(t).sum();
    })(x);
  });
  expect_contains(m, {"strata::add", "[3]", "[4]"});
  std::string thrown = error_message([&] {
    grad([](const Tensor& t) -> Tensor { STRATA_FAIL("user code", "failed on ", t.dim()); })(x);
  });
  expect_contains(thrown, {"user code"});
  // The transform works normally afterwards.
  EXPECT_EQ(grad([](const Tensor& t) { return t.sum(); })(x).to_vector<double>(),
            (std::vector<double>{1.0, 1.0, 1.0}));
}

TEST_F(GradErrors, AWrapperKeptPastItsTransform) {
  Tensor leaked;
  Tensor x = ones({2}, kFloat64);
  grad([&](const Tensor& t) {
    leaked = t * 2.0;
    return t.sum();
  })(x);
  std::string m = error_message([&] { leaked.sin(); });
  expect_contains(m, {"grad or jvp transform that has already returned"});
}

Tensor twice_cpu(const Tensor& self) { return self * 2.0; }

STRATA_LIBRARY(grad_errors_test, m) { m.def("twice(Tensor self) -> Tensor"); }
STRATA_LIBRARY_IMPL(grad_errors_test, CPU, m) { m.impl("twice", &twice_cpu); }

TEST_F(GradErrors, OpWithoutAFormula) {
  auto twice = Dispatcher::singleton()
                   .findSchemaOrThrow("grad_errors_test::twice", "")
                   .typed<Tensor(const Tensor&)>();
  Tensor x = ones({2}, kFloat64);
  EXPECT_EQ(twice.call(x).to_vector<double>(), (std::vector<double>{2.0, 2.0}));
  std::string m =
      error_message([&] { grad([&](const Tensor& t) { return twice.call(t).sum(); })(x); });
  expect_contains(m, {"grad_errors_test::twice", "no derivative formula", "grad level"});
}

}  // namespace
}  // namespace strata
