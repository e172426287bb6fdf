// The CUDA test binary: the op table's forward, grad and vmap(grad) checks on the
// GPU against the CPU (registered per op at start-up) and the backend's own tests. Every
// test skips, saying why, on a machine without a GPU.
#include <gtest/gtest.h>

namespace strata::testing {
void register_cuda_forward_tests();
void register_cuda_derivative_tests();
}  // namespace strata::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  strata::testing::register_cuda_forward_tests();
  strata::testing::register_cuda_derivative_tests();
  return RUN_ALL_TESTS();
}
