// Per-sample gradients of the examples' models (examples/models.h) by vmap(grad)
// on the GPU equal the CPU's: the MLP, the CNN, the Transformer block and the
// GroupNorm CNN, in Float32, within 1e-5 of the largest gradient value plus 1e-5
// relative (the devices sum in different orders). Every op of their forward and
// backward passes runs on CUDA; a missing kernel fails the test, naming the op.
// Max pooling has no derivative where a window's two largest values tie, and
// there the devices' roundings may pick different pixels: the CNN's input is one
// whose windows all have a clear winner (checked).
#include <gtest/gtest.h>

#include <string>

#include "tests/cuda/cuda_test_support.h"
#include "tests/cuda/params_on_gpu.h"

namespace strata::testing {
namespace {

template <class SampleLoss>
void expect_gpu_matches_cpu(SampleLoss loss, const models::Params& params, const Tensor& x) {
  const Tensor y = models::peer_labels(x.size(0));
  auto per_sample = vmap(grad(loss), {.in_dims = {none, 0, 0}});
  const models::Params expected = per_sample(params, x, y);
  expect_same_on_gpu(per_sample(on(params, cuda(0)), x.to(cuda(0)), y.to(cuda(0))), expected);
}

TEST(CudaModels, MlpPerSampleGradientsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  expect_gpu_matches_cpu(models::mlp_sample_loss, models::mlp_params(),
                         models::det({16, 784}, 0.37));
}

// The windows of the CNN's max pool (after conv1, conv2 and their relus, as
// models::cnn computes them) whose two largest values are within 1e-5 relative.
int64_t near_ties_in_pooling(const models::Params& p, const Tensor& x) {
  Tensor h = nn::conv2d(x, p.at("conv1.weight"), p.at("conv1.bias")).relu();
  h = nn::conv2d(h, p.at("conv2.weight"), p.at("conv2.bias")).relu();
  const int64_t n = h.size(0), c = h.size(1), rows = h.size(2) / 2, cols = h.size(3) / 2;
  const Tensor windows = h.reshape({n, c, rows, 2, cols, 2})
                             .permute({0, 1, 2, 4, 3, 5})
                             .reshape({n, c, rows, cols, 4});
  const Tensor top = std::get<0>(windows.topk(2, -1));
  const Tensor first = top.select(-1, 0), second = top.select(-1, 1);
  return ((first > 0).logical_and(first - second <= first * 1e-5)).sum().item<int64_t>();
}

TEST(CudaModels, CnnPerSampleGradientsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = models::det({8, 1, 28, 28}, 0.41);
  ASSERT_EQ(near_ties_in_pooling(models::cnn_params(), x), 0);
  expect_gpu_matches_cpu(models::cnn_sample_loss, models::cnn_params(), x);
}

TEST(CudaModels, CnnGradientOfOneSampleMatchesTheCpu) {
  STRATA_REQUIRE_CUDA();
  const models::Params p = models::cnn_params();
  const Tensor x = models::det({8, 1, 28, 28}, 0.41).select(0, 0);
  const Tensor y = models::peer_labels(1).reshape({});
  expect_same_on_gpu(grad(models::cnn_sample_loss)(on(p, cuda(0)), x.to(cuda(0)), y.to(cuda(0))),
              grad(models::cnn_sample_loss)(p, x, y));
}

TEST(CudaModels, TransformerPerSampleGradientsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  Generator gen(5);
  const Tensor tokens = randint(0, models::kVocab, {8, models::kSeq}, gen);
  const Tensor labels = randint(0, models::kClasses, {8}, gen);
  const models::Params params = models::transformer_params();
  auto per_sample = vmap(grad(models::transformer_sample_loss), {.in_dims = {none, 0, 0}});
  const models::Params expected = per_sample(params, tokens, labels);
  expect_same_on_gpu(per_sample(on(params, cuda(0)), tokens.to(cuda(0)), labels.to(cuda(0))), expected);
}

TEST(CudaModels, GroupNormCnnPerSampleGradientsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  expect_gpu_matches_cpu(models::gn_cnn_sample_loss, models::gn_cnn_params(),
                         models::det({8, 1, 28, 28}, 0.41));
}

}  // namespace
}  // namespace strata::testing
