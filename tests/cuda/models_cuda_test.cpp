// Per-sample gradients of the examples' models (examples/models.h) by vmap(grad)
// on the GPU equal the CPU's: the MLP, the CNN and the GroupNorm CNN, in Float32,
// within 1e-5 of the largest gradient value plus 1e-5 relative (the devices sum
// in different orders). Every op of the three forward and backward passes runs on
// CUDA; a missing kernel fails the test, naming the op.
#include <gtest/gtest.h>

#include <string>

#include "examples/models.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/test_support.h"

namespace strata::testing {
namespace {

models::Params on_gpu(const models::Params& params) {
  models::Params out;
  for (const auto& [name, value] : params) out.emplace(name, value.to(cuda(0)));
  return out;
}

void expect_same(const models::Params& actual, const models::Params& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, e] : expected) {
    const Tensor& a = actual.at(name);
    EXPECT_TRUE(a.device().is_cuda()) << name;
    const double scale = e.abs().amax().item<double>();
    EXPECT_TRUE(allclose(a, e, 1e-5 * scale, 1e-5)) << name;
  }
}

template <class SampleLoss>
void expect_gpu_matches_cpu(SampleLoss loss, const models::Params& params, const Tensor& x) {
  const Tensor y = models::peer_labels(x.size(0));
  auto per_sample = vmap(grad(loss), {.in_dims = {none, 0, 0}});
  const models::Params expected = per_sample(params, x, y);
  expect_same(per_sample(on_gpu(params), x.to(cuda(0)), y.to(cuda(0))), expected);
}

TEST(CudaModels, MlpPerSampleGradientsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  expect_gpu_matches_cpu(models::mlp_sample_loss, models::mlp_params(),
                         models::det({16, 784}, 0.37));
}

TEST(CudaModels, CnnPerSampleGradientsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  expect_gpu_matches_cpu(models::cnn_sample_loss, models::cnn_params(),
                         models::det({8, 1, 28, 28}, 0.37));
}

TEST(CudaModels, GroupNormCnnPerSampleGradientsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  expect_gpu_matches_cpu(models::gn_cnn_sample_loss, models::gn_cnn_params(),
                         models::det({8, 1, 28, 28}, 0.41));
}

}  // namespace
}  // namespace strata::testing
