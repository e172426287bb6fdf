#pragma once

#include <cstdint>

#include "kernels/cpu/conv.h"

namespace strata::cpu {

// Note [One-channel 3 x 3 convolutions]
// A first layer's convolution sees one input channel: its weight gradient per
// image is the product [O, P] x [P, 9] of the output gradient and a 9-row column
// matrix, whose 9 columns are too few for a blocked GEMM's tiles (and per sample,
// under vmap, there is one such product per image). Each of the 9 entries of a
// filter is instead a dot product of an output-gradient row with the image shifted
// by the tap, read in place: two output channels at a time keep their 18 sums in
// vector registers over the whole image, with no column matrix. The forward's
// 9-deep product is as poor a fit for a GEMM: the same loop with the roles turned
// keeps two channels' 18 weights in registers. Runs where the AVX-512 loops are
// compiled in, on Float32, for 3 x 3 kernels at stride 1 and dilation 1 without
// padding, one input channel per group.
bool one_channel_loops_apply(const Conv2dGeometry& g, bool is_float);

// out [out_channels, out_h * out_w] = the convolution of one image [in_h, in_w] with
// weight [out_channels, 9] plus bias [out_channels] (may be null).
void one_channel_forward(float* out, const float* image, const float* weight, const float* bias,
                         int64_t out_channels, const Conv2dGeometry& g);

// sum [out_channels, 9] = (accumulate ? sum : 0) + the weight gradient of one image
// [in_h, in_w] and its output gradient grad [out_channels, out_h * out_w].
void one_channel_weight_grad(float* sum, const float* grad, const float* image,
                             int64_t out_channels, const Conv2dGeometry& g, bool accumulate);

}  // namespace strata::cpu
