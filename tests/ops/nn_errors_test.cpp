// Bad input to the neural-network operators gives a strata::Error naming the op and
// what was wrong; and the semantics of dropout, which has no deterministic reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/nn_backward.h"
#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;
namespace nn = strata::nn;

namespace {

using strata::testing::error_message;
using strata::testing::expect_contains;

// ---- convolution ---------------------------------------------------------------------

TEST(NnErrors, Conv2dChannelMismatch) {
  const st::Tensor input = st::zeros({1, 3, 5, 5});
  const st::Tensor weight = st::zeros({4, 2, 3, 3});
  expect_contains(error_message([&] { nn::conv2d(input, weight, std::nullopt); }),
                  {"[strata::conv2d]", "[1, 3, 5, 5] has 3 channels", "[4, 2, 3, 3]",
                   "weight.size(1) * groups = 2"});
}

TEST(NnErrors, Conv2dChannelsNotDivisibleByGroups) {
  const st::Tensor input = st::zeros({1, 3, 5, 5});
  const st::Tensor weight = st::zeros({4, 1, 3, 3});
  expect_contains(error_message([&] { nn::conv2d(input, weight, std::nullopt, {1}, {0}, {1}, 2); }),
                  {"[strata::conv2d]", "input channels (3", "not divisible by groups = 2"});
  const st::Tensor weight3 = st::zeros({3, 2, 3, 3});
  expect_contains(error_message([&] {
                    nn::conv2d(st::zeros({1, 4, 5, 5}), weight3, std::nullopt, {1}, {0}, {1}, 2);
                  }),
                  {"output channels (3", "not divisible by groups = 2"});
}

TEST(NnErrors, Conv2dKernelLargerThanPaddedInput) {
  const st::Tensor input = st::zeros({1, 1, 3, 3});
  const st::Tensor weight = st::zeros({1, 1, 5, 5});
  expect_contains(error_message([&] { nn::conv2d(input, weight, std::nullopt); }),
                  {"[strata::conv2d]", "kernel of size 5x5", "larger than the padded input 3x3"});
  // Dilation widens the kernel: 3 taps 2 apart span 5 pixels.
  expect_contains(error_message([&] {
                    nn::conv2d(input, st::zeros({1, 1, 3, 3}), std::nullopt, {1}, {0}, {2});
                  }),
                  {"kernel of size 5x5"});
  // One more pixel of padding on each side makes it fit.
  EXPECT_EQ(nn::conv2d(input, weight, std::nullopt, 1, 1).sizes(), st::IntArrayRef({1, 1, 1, 1}));
}

TEST(NnErrors, Conv2dNot4D) {
  expect_contains(error_message([&] {
                    nn::conv2d(st::zeros({3, 5, 5}), st::zeros({4, 3, 3, 3}), std::nullopt);
                  }),
                  {"[strata::conv2d]", "expected a 4-D input", "[3, 5, 5]"});
  expect_contains(error_message([&] {
                    nn::conv2d(st::zeros({1, 3, 5, 5}), st::zeros({4, 27}), std::nullopt);
                  }),
                  {"expected a 4-D weight", "[4, 27]"});
}

TEST(NnErrors, Conv2dArguments) {
  const st::Tensor input = st::zeros({1, 2, 5, 5});
  const st::Tensor weight = st::zeros({3, 2, 3, 3});
  expect_contains(error_message([&] { nn::conv2d(input, weight, st::zeros({4})); }),
                  {"bias has shape [4], expected [3]"});
  expect_contains(error_message([&] {
                    nn::conv2d(input, weight, std::nullopt, {1, 1, 1});
                  }),
                  {"stride takes 1 or 2 values", "[1, 1, 1]"});
  expect_contains(error_message([&] { nn::conv2d(input, weight, std::nullopt, {0}); }),
                  {"stride must be positive"});
  expect_contains(error_message([&] {
                    nn::conv2d(input, st::zeros({3, 2, 3, 3}, st::kFloat64), std::nullopt);
                  }),
                  {"weight has dtype Float64 but the input has Float32"});
  expect_contains(error_message([&] {
                    nn::conv2d(st::zeros({1, 2, 5, 5}, st::kInt64),
                               st::zeros({3, 2, 3, 3}, st::kInt64), std::nullopt);
                  }),
                  {"input must be Float32 or Float64, got Int64"});
}

TEST(NnErrors, Conv2dBackwardGradOutputShape) {
  const st::Tensor weight = st::zeros({3, 2, 3, 3});
  expect_contains(
      error_message([&] {
        nn::conv2d_backward_input(st::zeros({1, 3, 4, 4}), {1, 2, 5, 5}, weight, {1}, {0}, {1}, 1);
      }),
      {"[strata::conv2d_backward_input]", "grad_output has shape [1, 3, 4, 4]", "[1, 3, 3, 3]"});
  expect_contains(error_message([&] {
                    nn::conv2d_backward_weight(st::zeros({1, 3, 3, 3}), st::zeros({1, 2, 5, 5}),
                                               {3, 4, 3, 3}, {1}, {0}, {1}, 1);
                  }),
                  {"[strata::conv2d_backward_weight]", "weight.size(1) * groups = 4"});
}

// ---- pooling -------------------------------------------------------------------------

TEST(NnErrors, PoolKernelLargerThanPaddedInput) {
  const st::Tensor input = st::zeros({1, 1, 2, 2});
  expect_contains(error_message([&] { nn::max_pool2d(input, 3); }),
                  {"[strata::max_pool2d_with_indices]", "kernel of size 3x3",
                   "larger than the padded input 2x2"});
  expect_contains(error_message([&] {
                    nn::avg_pool2d(input, {2, 3});
                  }),
                  {"[strata::avg_pool2d]", "kernel of size 2x3", "padded input 2x2"});
  EXPECT_EQ(nn::max_pool2d(input, {3}, {1}, {1}).sizes(), st::IntArrayRef({1, 1, 2, 2}));
}

TEST(NnErrors, PoolArguments) {
  const st::Tensor input = st::zeros({1, 1, 6, 6});
  expect_contains(error_message([&] { nn::max_pool2d(input, {2}, {}, {2}); }),
                  {"padding [2] must be between 0 and half the kernel size 2x2"});
  expect_contains(error_message([&] {
                    nn::max_pool2d(st::zeros({6, 6}), 2);
                  }),
                  {"expected a 3-D [C, H, W] or 4-D [N, C, H, W] input", "[6, 6]"});
  expect_contains(error_message([&] { nn::avg_pool2d(input, {0}); }),
                  {"kernel_size must be positive"});
  expect_contains(error_message([&] {
                    nn::avg_pool2d_backward(st::zeros({1, 1, 2, 2}), input, {2}, {2}, {0});
                  }),
                  {"[strata::avg_pool2d_backward]", "grad_output has shape [1, 1, 2, 2]",
                   "has shape [1, 1, 3, 3]"});
}

TEST(NnErrors, MaxPoolBackwardIndexOutOfRange) {
  const st::Tensor input = st::zeros({1, 1, 2, 2});
  const st::Tensor indices = st::tensor(std::vector<int64_t>{4}, {1, 1, 1, 1});
  expect_contains(error_message([&] {
                    nn::max_pool2d_backward(st::zeros({1, 1, 1, 1}), input, indices);
                  }),
                  {"[strata::max_pool2d_backward]", "index 4 is out of range", "2x2"});
}

// ---- softmax and losses --------------------------------------------------------------

TEST(NnErrors, Softmax) {
  expect_contains(error_message([&] {
                    nn::softmax(st::zeros({2, 3}), 2);
                  }),
                  {"[strata::softmax]", "dim 2 is out of range"});
  expect_contains(error_message([&] {
                    st::zeros({2, 3}, st::kInt64).log_softmax(1);
                  }),
                  {"[strata::log_softmax]", "Float32 or Float64, got Int64"});
  expect_contains(error_message([&] {
                    nn::softmax_backward(st::zeros({2, 3}), st::zeros({3, 2}), 1);
                  }),
                  {"[strata::softmax_backward]", "grad_output has shape [2, 3]", "[3, 2]"});
}

TEST(NnErrors, CrossEntropyTargetOutOfRange) {
  const st::Tensor logits = st::zeros({2, 3});
  const st::Tensor target = st::tensor(std::vector<int64_t>{0, 5}, {2});
  expect_contains(error_message([&] { nn::cross_entropy(logits, target); }),
                  {"[strata::nll_loss]", "target 5", "out of range for 3 classes"});
  const st::Tensor negative = st::tensor(std::vector<int64_t>{-1, 0}, {2});
  expect_contains(error_message([&] { nn::nll_loss(logits, negative); }),
                  {"target -1", "3 classes", "ignore_index -100"});
  // The ignored value is allowed, whatever it is.
  EXPECT_NO_THROW(nn::nll_loss(logits, negative, std::nullopt, nn::Reduction::Sum, -1));
}

TEST(NnErrors, NllLossTargetDtypeAndShape) {
  const st::Tensor input = st::zeros({2, 3});
  expect_contains(error_message([&] { nn::nll_loss(input, st::zeros({2})); }),
                  {"[strata::nll_loss]", "target must hold Int64 class indices", "Float32"});
  expect_contains(error_message([&] { nn::cross_entropy(input, st::zeros({2}, st::kFloat64)); }),
                  {"Int64", "Float64"});
  const st::Tensor target = st::tensor(std::vector<int64_t>{0, 1, 2}, {3});
  expect_contains(error_message([&] { nn::nll_loss(input, target); }),
                  {"target of shape [3] does not match input of shape [2, 3]"});
  expect_contains(error_message([&] {
                    nn::nll_loss(input, st::tensor(std::vector<int64_t>{0, 1}, {2}), st::ones({2}));
                  }),
                  {"weight has shape [2], expected [3]"});
  expect_contains(error_message([&] {
                    nn::cross_entropy(st::zeros({2, 3, 4}), target);
                  }),
                  {"[strata::cross_entropy]", "[2, 3, 4]"});
}

TEST(NnErrors, MseLoss) {
  expect_contains(error_message([&] {
                    nn::mse_loss(st::zeros({2, 3}), st::zeros({4}));
                  }),
                  {"[strata::mse_loss]"});
  expect_contains(
      error_message([&] { nn::mse_loss(st::zeros({2}, st::kInt64), st::zeros({2}, st::kInt64)); }),
      {"expected floating-point input and target", "Int64"});
}

// ---- linear, layer_norm, embedding ---------------------------------------------------

TEST(NnErrors, Linear) {
  expect_contains(error_message([&] {
                    nn::linear(st::zeros({4, 3}), st::zeros({5, 2}));
                  }),
                  {"[strata::linear]", "[4, 3] has 3 features", "[5, 2] expects 2"});
  expect_contains(error_message([&] {
                    nn::linear(st::zeros({4, 3}), st::zeros({5, 3}), st::zeros({4}));
                  }),
                  {"bias has shape [4], expected [5]"});
}

TEST(NnErrors, LayerNormShapeMismatch) {
  const st::Tensor input = st::zeros({2, 3, 4});
  expect_contains(error_message([&] { nn::layer_norm(input, {3}); }),
                  {"[strata::layer_norm]", "normalized_shape [3]", "[2, 3, 4]"});
  expect_contains(error_message([&] {
                    nn::layer_norm(input, {1, 2, 3, 4});
                  }),
                  {"normalized_shape [1, 2, 3, 4]"});
  expect_contains(error_message([&] { nn::layer_norm(input, {4}, st::ones({3})); }),
                  {"weight has shape [3], expected [4]"});
}

TEST(NnErrors, EmbeddingIndexOutOfRange) {
  const st::Tensor weight = st::zeros({5, 3});
  expect_contains(error_message([&] {
                    nn::embedding(weight, st::tensor(std::vector<int64_t>{1, 7}, {2}));
                  }),
                  {"[strata::embedding]", "index 7", "weight of 5 rows"});
  expect_contains(
      error_message([&] { nn::embedding(weight, st::tensor(std::vector<int64_t>{-1}, {1})); }),
      {"index -1"});
  expect_contains(error_message([&] { nn::embedding(weight, st::zeros({2})); }),
                  {"indices must be Int64, got Float32"});
}

// ---- parallel loops ------------------------------------------------------------------

st::Tensor wavy(std::vector<int64_t> sizes, double phase) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(std::sin(0.37 * i + phase));
  return st::tensor(values, sizes);
}

// Each result of a fixed input, computed with the default threads and with one.
std::vector<std::vector<double>> nn_results(int threads) {
  st::cpu::set_num_threads(threads);
  const st::Tensor x = wavy({16, 8, 24, 24}, 0.1), w = wavy({16, 8, 3, 3}, 0.2);
  const st::Tensor y = nn::conv2d(x, w, std::nullopt, {1}, {1});
  std::vector<std::vector<double>> results{
      y.to_vector<double>(),
      nn::conv2d_backward_input(y, x.sizes(), w, {1}, {1}, {1}, 1).to_vector<double>(),
      nn::conv2d_backward_weight(y, x, w.sizes(), {1}, {1}, {1}, 1).to_vector<double>(),
      nn::softmax(x, 0).to_vector<double>(),
      nn::mse_loss(x, wavy({24}, 0.3), nn::Reduction::Sum).to_vector<double>()};
  st::cpu::set_num_threads(0);
  return results;
}

// The weight gradient and the loss sums are summed over fixed chunks, never per thread.
TEST(NnParallel, ResultsIndependentOfThreadCount) { EXPECT_EQ(nn_results(0), nn_results(1)); }

// ---- dropout -------------------------------------------------------------------------

std::vector<double> dropout_values(const st::Tensor& x, double p, uint64_t seed) {
  st::Generator gen(seed);
  return nn::dropout(x, p, true, gen).to_vector<double>();
}

TEST(NnDropout, SameSeedSameMask) {
  const st::Tensor x = st::ones({1000});
  EXPECT_EQ(dropout_values(x, 0.3, 7), dropout_values(x, 0.3, 7));
  EXPECT_NE(dropout_values(x, 0.3, 7), dropout_values(x, 0.3, 8));
  // Each call draws fresh counters from the generator.
  st::Generator gen(7);
  EXPECT_NE(nn::dropout(x, 0.3, true, gen).to_vector<double>(),
            nn::dropout(x, 0.3, true, gen).to_vector<double>());
}

TEST(NnDropout, FractionAndScale) {
  const int64_t n = 200000;
  const double p = 0.3;
  const std::vector<double> y = dropout_values(st::full({n}, 2.0), p, 11);
  int64_t zeros = 0;
  for (double v : y) {
    if (v == 0) {
      ++zeros;
    } else {
      ASSERT_NEAR(v, 2.0 / (1 - p), 1e-6);
    }
  }
  // The standard deviation of the fraction is about 0.001.
  EXPECT_NEAR(static_cast<double>(zeros) / n, p, 0.006);
}

TEST(NnDropout, IndependentOfThreadCount) {
  const st::Tensor x = st::ones({300000}, st::kFloat64);
  const std::vector<double> parallel = dropout_values(x, 0.5, 3);
  st::cpu::set_num_threads(1);
  const std::vector<double> serial = dropout_values(x, 0.5, 3);
  st::cpu::set_num_threads(0);
  EXPECT_EQ(parallel, serial);
}

TEST(NnDropout, IdentityAndEdgeCases) {
  const st::Tensor x = st::tensor({1.0, -2.0, 3.0}, {3});
  st::Generator gen(1);
  EXPECT_EQ(nn::dropout(x, 0.9, false, gen).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(nn::dropout(x, 0.0, true, gen).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(nn::dropout(x, 1.0, true, gen).to_vector<double>(), std::vector<double>(3, 0.0));
  expect_contains(error_message([&] { nn::dropout(x, 1.5, true, gen); }),
                  {"[strata::dropout]", "probability must be in [0, 1], got 1.5"});
}

}  // namespace
