#pragma once

// Trees of parameters (examples/models.h) moved to a device, and a GPU result
// compared with the CPU's: each leaf on the GPU and within 1e-5 of the largest
// expected value plus 1e-5 relative (the devices sum in different orders).

#include <gtest/gtest.h>

#include "examples/models.h"
#include "tests/test_support.h"

namespace strata::testing {

inline models::Params on(const models::Params& params, Device device) {
  return tree::map(params, [device](const Tensor& t) { return t.to(device); });
}

inline void expect_same_on_gpu(const models::Params& actual, const models::Params& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, e] : expected) {
    const Tensor& a = actual.at(name);
    EXPECT_TRUE(a.device().is_cuda()) << name;
    const double scale = e.abs().amax().item<double>();
    EXPECT_TRUE(allclose(a, e, 1e-5 * scale, 1e-5)) << name;
  }
}

}  // namespace strata::testing
