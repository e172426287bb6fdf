// Check 1 of ../shared/TESTING.md for every entry of the op table: the op against
// its naive reference, on every sample, in every dtype the entry supports. One
// GoogleTest test per (op, dtype), registered from the table at start-up.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"

namespace strata::testing {
namespace {

// Compares shape, dtype and values; NaNs must match NaNs.
::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected,
                                         Tolerance tol) {
  if (actual.sizes() != expected.sizes()) {
    return ::testing::AssertionFailure() << "shape " << shape_string(actual.sizes())
                                         << ", expected " << shape_string(expected.sizes());
  }
  if (actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure()
           << "dtype " << actual.dtype() << ", expected " << expected.dtype();
  }
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(e[i]);
    const bool same_inf = std::isinf(a[i]) && a[i] == e[i];
    if (both_nan || same_inf) continue;
    if (!(std::abs(a[i] - e[i]) <= tol.atol + tol.rtol * std::abs(e[i]))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << ", expected " << e[i] << " (atol " << tol.atol
             << ", rtol " << tol.rtol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

void check_forward(const OpInfo& info, ScalarType dtype) {
  const std::vector<Sample> samples = info.samples(dtype);
  ASSERT_FALSE(samples.empty()) << info.name << " has no samples for " << dtype;
  const Tolerance tol = info.tolerance(Check::Forward, dtype);
  for (const Sample& sample : samples) {
    SCOPED_TRACE(info.name + " " + to_string(dtype) + " sample: " + sample.description);
    const std::vector<Tensor> actual = info.op(sample.inputs, sample.args);
    const std::vector<Tensor> expected = info.reference(sample.inputs, sample.args);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t k = 0; k < actual.size(); ++k) {
      EXPECT_TRUE(tensors_close(actual[k], expected[k], tol)) << "output " << k;
    }
  }
}

class ForwardTest : public ::testing::Test {
 public:
  ForwardTest(const OpInfo& info, ScalarType dtype) : info_(info), dtype_(dtype) {}
  void TestBody() override {
    if (const ExpectedFailure* xfail = info_.expected_failure(Check::Forward, dtype_)) {
      GTEST_SKIP() << "expected failure: " << xfail->reason;
    }
    check_forward(info_, dtype_);
  }

 private:
  const OpInfo& info_;
  ScalarType dtype_;
};

}  // namespace

void register_forward_tests() {
  for (const OpInfo& info : op_infos()) {
    for (ScalarType dtype : info.dtypes) {
      ::testing::RegisterTest(
          "OpForward", test_name(info.name + "." + to_string(dtype)).c_str(), nullptr, nullptr,
          __FILE__, __LINE__,
          [&info, dtype]() -> ::testing::Test* { return new ForwardTest(info, dtype); });
    }
  }
}

}  // namespace strata::testing
