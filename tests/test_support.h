#pragma once

// Helpers shared by every test binary.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "dispatcher/dispatch_mode.h"
#include "dispatcher/dispatcher.h"
#include "tensor/error.h"
#include "tensor/tensor.h"
#include "transforms/layer_stack.h"

namespace strata::testing {

// Runs f, which must throw strata::Error (any other exception, or none, fails the
// test), and returns the message.
template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected strata::Error, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected strata::Error, nothing was thrown";
  return "";
}

// A dispatch mode that counts the calls it sees, by operator name.
class CountingMode : public DispatchMode {
 public:
  explicit CountingMode(std::map<std::string, int>& counts) : counts_(counts) {}
  void dispatch(const OperatorHandle& op, Stack& stack) override {
    ++counts_[op.operator_name().to_string()];
    call_next(op, stack);
  }

 private:
  std::map<std::string, int>& counts_;
};

inline void expect_contains(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    EXPECT_NE(message.find(part), std::string::npos)
        << "message \"" << message << "\" should contain \"" << part << "\"";
  }
}

// A fixture for tests of bad input to transforms: after each test the layer
// stack is empty and the thread-local key sets are as they were.
class TransformStateRestored : public ::testing::Test {
 protected:
  void SetUp() override { before_ = local_dispatch_key_set(); }
  void TearDown() override {
    EXPECT_TRUE(layer_stack_empty());
    EXPECT_EQ(local_dispatch_key_set().included, before_.included);
    EXPECT_EQ(local_dispatch_key_set().excluded, before_.excluded);
  }

 private:
  LocalDispatchKeySet before_;
};

// How many times `name` occurs among a graph's op names (Graph::op_names()).
inline int count_ops(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<int>(std::count(names.begin(), names.end(), name));
}

// Same shape, and every value within atol + rtol * |expected| (NaNs match NaNs).
inline ::testing::AssertionResult allclose(const Tensor& actual, const Tensor& expected,
                                           double atol = 1e-9, double rtol = 1e-7) {
  if (actual.sizes() != expected.sizes()) {
    return ::testing::AssertionFailure() << "shape " << shape_string(actual.sizes())
                                         << " != expected " << shape_string(expected.sizes());
  }
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if ((std::isnan(a[i]) && std::isnan(e[i])) || a[i] == e[i]) continue;
    if (!(std::abs(a[i] - e[i]) <= atol + rtol * std::abs(e[i]))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " != expected " << e[i] << " (shape "
             << shape_string(actual.sizes()) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace strata::testing
