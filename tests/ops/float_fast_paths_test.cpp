// Float32 kernels with loops of their own (kernels/cpu/conv_one_channel.cpp: Note
// [One-channel 3 x 3 convolutions]; kernels/cpu/conv_narrow.cpp:
// Note [Column matrices of narrow images in vectors]; kernels/cpu/pool.cpp: Note
// [Pooling rows of 2 x 2 windows in vectors]) against the same op in Float64, which
// takes the general loops: shapes with rows of more than one vector and a partial
// last vector, odd channel counts, several images summed and samples as groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "ops/nn_backward.h"
#include "strata/strata.h"

namespace st = strata;
namespace nn = strata::nn;

namespace {

// The largest |got - want| over 1 + |want|.
double worst_relative_error(const st::Tensor& got, const st::Tensor& want) {
  const std::vector<double> g = got.to(st::kFloat64).contiguous().to_vector<double>();
  const std::vector<double> w = want.contiguous().to_vector<double>();
  EXPECT_EQ(g.size(), w.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(g.size(), w.size()); ++i) {
    worst = std::max(worst, std::abs(g[i] - w[i]) / (1 + std::abs(w[i])));
  }
  return worst;
}

struct OneChannelCase {
  int64_t images, channels, groups, out_channels, height, width;
};

TEST(FloatFastPaths, OneChannelConvolutionAndWeightGradientMatchFloat64) {
  const st::Generator gen(7);
  for (const OneChannelCase& c : {OneChannelCase{3, 1, 1, 5, 20, 37},  // summed over images
                                  OneChannelCase{1, 4, 4, 12, 9, 18},   // samples as groups
                                  OneChannelCase{2, 3, 3, 3, 28, 28}}) {
    const st::Tensor input = st::randn({c.images, c.channels, c.height, c.width}, gen);
    const st::Tensor grad =
        st::randn({c.images, c.out_channels, c.height - 2, c.width - 2}, gen);
    const std::vector<int64_t> weight_sizes = {c.out_channels, c.channels / c.groups, 3, 3};
    const st::Tensor weight = st::randn(weight_sizes, gen), bias = st::randn({c.out_channels}, gen);
    for (const bool with_bias : {true, false}) {
      const std::optional<st::Tensor> b = with_bias ? std::optional(bias) : std::nullopt;
      const std::optional<st::Tensor> b64 =
          with_bias ? std::optional(bias.to(st::kFloat64)) : std::nullopt;
      EXPECT_LT(worst_relative_error(
                    nn::conv2d(input, weight, b, {1}, {0}, {1}, c.groups),
                    nn::conv2d(input.to(st::kFloat64), weight.to(st::kFloat64), b64, {1}, {0},
                               {1}, c.groups)),
                1e-4)
          << "forward, images " << c.images << ", groups " << c.groups << ", bias " << with_bias;
    }
    const st::Tensor got = nn::conv2d_backward_weight(grad, input, weight_sizes, {1}, {0}, {1},
                                                      c.groups);
    const st::Tensor want =
        nn::conv2d_backward_weight(grad.to(st::kFloat64), input.to(st::kFloat64), weight_sizes,
                                   {1}, {0}, {1}, c.groups);
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_LT(worst_relative_error(got, want), 1e-4)
        << "images " << c.images << ", groups " << c.groups << ", " << c.height << "x" << c.width;
  }
}

struct NarrowCase {
  int64_t images, channels, groups, out_channels, height, width, kernel_h, kernel_w;
};

// Images of at most 16 columns (Note [Column matrices of narrow images in vectors]):
// the convolution and both its adjoints.
TEST(FloatFastPaths, NarrowImageConvolutionMatchesFloat64) {
  const st::Generator gen(5);
  for (const NarrowCase& c : {NarrowCase{2, 16, 1, 32, 13, 13, 3, 3},
                              NarrowCase{3, 6, 3, 9, 7, 16, 2, 5},  // a full vector, groups
                              NarrowCase{1, 2, 1, 3, 4, 3, 3, 3},   // one output column
                              NarrowCase{2, 4, 4, 8, 11, 9, 1, 1},
                              NarrowCase{1, 3, 1, 5, 6, 17, 3, 3}}) {  // too wide: the copies
    const st::Tensor input = st::randn({c.images, c.channels, c.height, c.width}, gen);
    const st::Tensor weight =
        st::randn({c.out_channels, c.channels / c.groups, c.kernel_h, c.kernel_w}, gen);
    const st::Tensor grad = st::randn(
        {c.images, c.out_channels, c.height - c.kernel_h + 1, c.width - c.kernel_w + 1}, gen);
    const st::Tensor input64 = input.to(st::kFloat64), weight64 = weight.to(st::kFloat64);
    const st::Tensor grad64 = grad.to(st::kFloat64);
    const std::vector<int64_t> input_sizes = {c.images, c.channels, c.height, c.width};
    const std::vector<int64_t> weight_sizes = {c.out_channels, c.channels / c.groups, c.kernel_h,
                                               c.kernel_w};
    EXPECT_LT(worst_relative_error(nn::conv2d(input, weight, std::nullopt, {1}, {0}, {1}, c.groups),
                                   nn::conv2d(input64, weight64, std::nullopt, {1}, {0}, {1},
                                              c.groups)),
              1e-4)
        << "forward, " << c.height << "x" << c.width;
    EXPECT_LT(worst_relative_error(
                  nn::conv2d_backward_input(grad, input_sizes, weight, {1}, {0}, {1}, c.groups),
                  nn::conv2d_backward_input(grad64, input_sizes, weight64, {1}, {0}, {1}, c.groups)),
              1e-4)
        << "input gradient, " << c.height << "x" << c.width;
    EXPECT_LT(worst_relative_error(
                  nn::conv2d_backward_weight(grad, input, weight_sizes, {1}, {0}, {1}, c.groups),
                  nn::conv2d_backward_weight(grad64, input64, weight_sizes, {1}, {0}, {1},
                                             c.groups)),
              1e-4)
        << "weight gradient, " << c.height << "x" << c.width;
  }
}

TEST(FloatFastPaths, TwoByTwoMaxPoolRowsAndBackwardMatchFloat64) {
  const st::Generator gen(11);
  // Widths of 20 windows (a vector and a part) and 2 windows with a column left over.
  for (int64_t width : {40, 41, 5}) {
    const st::Tensor input = st::randn({2, 3, 7, width}, gen);
    for (const std::vector<int64_t>& stride : {std::vector<int64_t>{2, 2}, {1, 2}}) {
      const auto [values, indices] = nn::max_pool2d_with_indices(input, {2, 2}, stride);
      const auto [want_values, want_indices] =
          nn::max_pool2d_with_indices(input.to(st::kFloat64), {2, 2}, stride);
      EXPECT_EQ(indices.to_vector<int64_t>(), want_indices.to_vector<int64_t>())
          << "width " << width << ", row stride " << stride[0];
      EXPECT_EQ(worst_relative_error(values, want_values), 0.0);
      // And the backward of those indices (row stride 1's windows overlap: a
      // pixel's two gradients add in Float32 there).
      const st::Tensor grad = st::randn(values.sizes(), gen);
      EXPECT_LT(worst_relative_error(nn::max_pool2d_backward(grad, input, indices),
                                     nn::max_pool2d_backward(grad.to(st::kFloat64),
                                                             input.to(st::kFloat64), indices)),
                1e-6)
          << "backward, width " << width << ", row stride " << stride[0];
    }
  }
}

}  // namespace
