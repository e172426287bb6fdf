// The convolution and pooling kernels of the CNN example at its own sizes, on the
// GPU against the CPU: conv2d and its two backward ops plainly (a batch of 8) and
// in the grouped form vmap gives per-sample weight gradients (the batch folded
// into the channels, groups = 8), and max_pool2d with its backward, whose
// gradient must land on the pixel each window picked.
#include <gtest/gtest.h>

#include "examples/models.h"
#include "ops/nn_backward.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/test_support.h"

namespace strata::testing {
namespace {

void expect_close(const Tensor& gpu, const Tensor& cpu, const char* what) {
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  const double scale = cpu.abs().amax().item<double>();
  EXPECT_TRUE(allclose(gpu.to(kCPU), cpu, 1e-5 * scale, 1e-5)) << what;
}

Tensor g(const Tensor& t) { return t.to(cuda(0)); }

TEST(CudaConv, PlainAndGroupedConvolutionsAtTheCnnSizes) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = models::det({8, 32, 26, 26}, 0.21);
  const Tensor w = models::det({64, 32, 3, 3}, 0.33) * 0.06;
  const Tensor go = models::det({8, 64, 24, 24}, 0.45);
  const std::vector<int64_t> one{1, 1}, zero{0, 0};
  expect_close(nn::conv2d(g(x), g(w), std::nullopt), nn::conv2d(x, w, std::nullopt),
               "conv2d forward");
  expect_close(nn::conv2d_backward_input(g(go), x.sizes(), g(w), one, zero, one, 1),
               nn::conv2d_backward_input(go, x.sizes(), w, one, zero, one, 1),
               "conv2d backward input");
  expect_close(nn::conv2d_backward_weight(g(go), g(x), w.sizes(), one, zero, one, 1),
               nn::conv2d_backward_weight(go, x, w.sizes(), one, zero, one, 1),
               "conv2d backward weight");
  // Per-sample weight gradients: [1, 8*32, 26, 26] against [1, 8*64, 24, 24].
  const Tensor xs = x.reshape({1, 8 * 32, 26, 26});
  const Tensor gos = go.reshape({1, 8 * 64, 24, 24});
  const std::vector<int64_t> ws{8 * 64, 32, 3, 3};
  expect_close(nn::conv2d_backward_weight(g(gos), g(xs), ws, one, zero, one, 8),
               nn::conv2d_backward_weight(gos, xs, ws, one, zero, one, 8),
               "grouped conv2d backward weight");
  const Tensor w8 = models::det({8 * 64, 32, 3, 3}, 0.17) * 0.06;
  expect_close(nn::conv2d_backward_input(g(gos), xs.sizes(), g(w8), one, zero, one, 8),
               nn::conv2d_backward_input(gos, xs.sizes(), w8, one, zero, one, 8),
               "grouped conv2d backward input");
}

TEST(CudaConv, MaxPoolAndItsBackwardAtTheCnnSizes) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = models::det({8, 64, 24, 24}, 0.29).relu();
  const auto [values, indices] = nn::max_pool2d_with_indices(x, {2, 2});
  const auto [gpu_values, gpu_indices] = nn::max_pool2d_with_indices(g(x), {2, 2});
  expect_close(gpu_values, values, "max_pool2d values");
  const Tensor go = models::det(values.sizes(), 0.51);
  expect_close(nn::max_pool2d_backward(g(go), g(x), gpu_indices),
               nn::max_pool2d_backward(go, x, indices), "max_pool2d backward");
}

}  // namespace
}  // namespace strata::testing
