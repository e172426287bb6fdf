// One-channel 3 x 3 convolutions and their weight gradient (Note [One-channel
// 3 x 3 convolutions], conv_one_channel.h).
#include "kernels/cpu/conv_one_channel.h"

#include <algorithm>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "tensor/error.h"

namespace strata::cpu {

bool one_channel_loops_apply(const Conv2dGeometry& g, bool is_float) {
#if defined(__AVX512F__)
  return is_float && g.in_channels == g.groups && g.kernel_h == 3 && g.kernel_w == 3 &&
         g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.pad_h == 0 && g.pad_w == 0;
#else
  (void)g, (void)is_float;
  return false;
#endif
}

#if defined(__AVX512F__)
namespace {

constexpr int kTaps = 9;

// Output channels o and o + 1 (its gradient row `second`, zeros when o is the last).
// The sizes are locals and the tap loops unrolled so that the sums stay in registers.
void two_channels(float* sum, const float* first, const float* second, const float* image,
                  const Conv2dGeometry& g, int rows, bool accumulate) {
  const int64_t in_w = g.in_w, out_w = g.out_w, out_h = g.out_h;
  __m512 acc0[kTaps], acc1[kTaps];
#pragma GCC unroll 9
  for (int t = 0; t < kTaps; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  for (int64_t oh = 0; oh < out_h; ++oh) {
    for (int64_t ow = 0; ow < out_w; ow += 16) {
      const auto lanes = static_cast<__mmask16>((1u << std::min<int64_t>(16, out_w - ow)) - 1);
      const int64_t at = oh * out_w + ow;
      const __m512 grad0 = _mm512_maskz_loadu_ps(lanes, first + at);
      const __m512 grad1 = _mm512_maskz_loadu_ps(second != nullptr ? lanes : 0,
                                                 (second != nullptr ? second : first) + at);
      const float* pixels = image + oh * in_w + ow;
#pragma GCC unroll 9
      for (int t = 0; t < kTaps; ++t) {
        const __m512 x = _mm512_maskz_loadu_ps(lanes, pixels + (t / 3) * in_w + t % 3);
        acc0[t] = _mm512_fmadd_ps(grad0, x, acc0[t]);
        acc1[t] = _mm512_fmadd_ps(grad1, x, acc1[t]);
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    for (int t = 0; t < kTaps; ++t) {
      const float total = _mm512_reduce_add_ps(r == 0 ? acc0[t] : acc1[t]);
      sum[r * kTaps + t] = accumulate ? sum[r * kTaps + t] + total : total;
    }
  }
}

// Output channels o and o + 1 (`second` null when o is the last).
void two_channels_forward(float* first, float* second, const float* image, const float* weight,
                          const float* bias, const Conv2dGeometry& g) {
  const int64_t in_w = g.in_w, out_w = g.out_w, out_h = g.out_h;
  __m512 w0[kTaps], w1[kTaps];
#pragma GCC unroll 9
  for (int t = 0; t < kTaps; ++t) {
    w0[t] = _mm512_set1_ps(weight[t]);
    w1[t] = _mm512_set1_ps(second != nullptr ? weight[kTaps + t] : 0.0f);
  }
  const __m512 b0 = _mm512_set1_ps(bias != nullptr ? bias[0] : 0.0f);
  const __m512 b1 = _mm512_set1_ps(bias != nullptr && second != nullptr ? bias[1] : 0.0f);
  for (int64_t oh = 0; oh < out_h; ++oh) {
    for (int64_t ow = 0; ow < out_w; ow += 16) {
      const auto lanes = static_cast<__mmask16>((1u << std::min<int64_t>(16, out_w - ow)) - 1);
      const float* pixels = image + oh * in_w + ow;
      __m512 acc0 = b0, acc1 = b1;
#pragma GCC unroll 9
      for (int t = 0; t < kTaps; ++t) {
        const __m512 x = _mm512_maskz_loadu_ps(lanes, pixels + (t / 3) * in_w + t % 3);
        acc0 = _mm512_fmadd_ps(w0[t], x, acc0);
        acc1 = _mm512_fmadd_ps(w1[t], x, acc1);
      }
      _mm512_mask_storeu_ps(first + oh * out_w + ow, lanes, acc0);
      if (second != nullptr) _mm512_mask_storeu_ps(second + oh * out_w + ow, lanes, acc1);
    }
  }
}

}  // namespace

void one_channel_forward(float* out, const float* image, const float* weight, const float* bias,
                         int64_t out_channels, const Conv2dGeometry& g) {
  const int64_t positions = g.out_h * g.out_w;
  for (int64_t o = 0; o < out_channels; o += 2) {
    const bool pair = o + 1 < out_channels;
    two_channels_forward(out + o * positions, pair ? out + (o + 1) * positions : nullptr, image,
                         weight + o * kTaps, bias != nullptr ? bias + o : nullptr, g);
  }
}

void one_channel_weight_grad(float* sum, const float* grad, const float* image,
                             int64_t out_channels, const Conv2dGeometry& g, bool accumulate) {
  const int64_t positions = g.out_h * g.out_w;
  for (int64_t o = 0; o < out_channels; o += 2) {
    const bool pair = o + 1 < out_channels;
    two_channels(sum + o * kTaps, grad + o * positions,
                 pair ? grad + (o + 1) * positions : nullptr, image, g, pair ? 2 : 1, accumulate);
  }
}
#else
void one_channel_forward(float*, const float*, const float*, const float*, int64_t,
                         const Conv2dGeometry&) {
  STRATA_CHECK(false, "strata::conv2d",
               "the one-channel convolution loop is not compiled in (no AVX-512)");
}

void one_channel_weight_grad(float*, const float*, const float*, int64_t, const Conv2dGeometry&,
                             bool) {
  STRATA_CHECK(false, "strata::conv2d_backward_weight",
               "the one-channel weight gradient loop is not compiled in (no AVX-512)");
}
#endif

}  // namespace strata::cpu
