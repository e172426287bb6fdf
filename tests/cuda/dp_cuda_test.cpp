// DP-SGD on the GPU: the private gradient by per-sample gradients (vmap(grad))
// and by ghost clipping, and DpSgd steps with momentum, on CUDA tensors equal
// the CPU's. Poisson batches and noise are drawn on the CPU and moved to the
// parameters' device (Note [One noise draw per step]), so the devices differ by
// rounding only. The CNN's input has no near ties in its max pools (checked in
// models_cuda_test.cpp for the same input), where the devices could pick
// different pixels.
#include <gtest/gtest.h>

#include <string>

#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/params_on_gpu.h"

namespace strata::testing {
namespace {

// Bounds that clip some samples and not others, and noise well above rounding.
const dp::DpSgdOptions kOptions{.noise_multiplier = 0.5, .max_grad_norm = 0.05, .noise_seed = 11};

template <class Loss>
void expect_private_gradient_matches(const Loss& loss, const models::Params& params,
                                     const Tensor& x) {
  const Tensor y = models::peer_labels(x.size(0));
  const models::Params expected =
      dp::private_gradient(dist::LocalGroup{}, loss, params, x, y, 3, 6.0, kOptions);
  expect_same_on_gpu(dp::private_gradient(dist::LocalGroup{}, loss, on(params, cuda(0)), x.to(cuda(0)),
                                   y.to(cuda(0)), 3, 6.0, kOptions),
              expected);
}

TEST(CudaDpSgd, PerSamplePrivateGradientMatchesTheCpu) {
  STRATA_REQUIRE_CUDA();
  expect_private_gradient_matches(models::mlp_sample_loss, models::mlp_params(),
                                  models::det({8, 784}, 0.37));
  expect_private_gradient_matches(models::cnn_sample_loss, models::cnn_params(),
                                  models::det({8, 1, 28, 28}, 0.41));
}

TEST(CudaDpSgd, GhostClippingPrivateGradientMatchesTheCpu) {
  STRATA_REQUIRE_CUDA();
  expect_private_gradient_matches(dp::ghost(&models::mlp_ghost_loss), models::mlp_params(),
                                  models::det({8, 784}, 0.37));
  expect_private_gradient_matches(dp::ghost(&models::cnn_ghost_loss), models::cnn_params(),
                                  models::det({8, 1, 28, 28}, 0.41));
}

// Three steps of DpSgd with momentum from the same sampler and noise seed: the
// GPU's parameters and momentum buffers follow the CPU's.
TEST(CudaDpSgd, StepsWithMomentumMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = models::det({24, 784}, 0.37);
  const Tensor y = models::peer_labels(24);
  dp::DpSgdOptions options = kOptions;
  options.momentum = 0.9;
  auto run = [&](Device device) {
    dp::DpSgd<dist::LocalGroup> optimizer({}, dp::PoissonSampler(24, 0.5, 5), options, 0.5);
    models::Params params = on(models::mlp_params(), device);
    for (int i = 0; i < 3; ++i) optimizer.step(models::mlp_sample_loss, params, x.to(device),
                                               y.to(device));
    params["velocity of the first leaf"] = optimizer.momentum_buffers()[0];
    return params;
  };
  const models::Params expected = run(kCPU);
  expect_same_on_gpu(run(cuda(0)), expected);
}

}  // namespace
}  // namespace strata::testing
