// Column matrices of narrow images (Note [Column matrices of narrow images in
// vectors], conv_narrow.h).
#include "kernels/cpu/conv_narrow.h"

#include <algorithm>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "tensor/error.h"

namespace strata::cpu {

bool narrow_columns_apply(const Conv2dGeometry& g, bool is_float) {
#if defined(__AVX512F__)
  return is_float && g.in_w <= 16 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 &&
         g.dilation_w == 1 && g.pad_h == 0 && g.pad_w == 0 && g.out_h > 0 && g.out_w > 0;
#else
  (void)g, (void)is_float;
  return false;
#endif
}

#if defined(__AVX512F__)
namespace {

__mmask16 first_lanes(int64_t count) { return static_cast<__mmask16>((1u << count) - 1); }

__m512i lane_numbers() {
  return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// r[i] lane j becomes r[j] lane i: pairs, then pairs of pairs, within 128-bit
// blocks, then the blocks.
void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 1]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

}  // namespace

void narrow_im2row(const float* image, float* rows, const Conv2dGeometry& g, int64_t channels) {
  const int64_t in_h = g.in_h, in_w = g.in_w, out_h = g.out_h, out_w = g.out_w;
  const int64_t kernel_h = g.kernel_h, kernel_w = g.kernel_w;
  const int64_t depth = channels * kernel_h * kernel_w;
  const __mmask16 out_lanes = first_lanes(out_w);
  for (int64_t oh = 0; oh < out_h; ++oh) {
    float* out = rows + oh * out_w * depth;
    int64_t c = 0, kh = 0, kw = 0;  // of column row k, stepped with it
    for (int64_t k0 = 0; k0 < depth; k0 += 16) {
      const int64_t count = std::min<int64_t>(16, depth - k0);
      __m512 r[16];
      for (int64_t i = 0; i < 16; ++i) {
        if (i >= count) {
          r[i] = _mm512_setzero_ps();
          continue;
        }
        r[i] = _mm512_maskz_loadu_ps(out_lanes, image + (c * in_h + oh + kh) * in_w + kw);
        if (++kw == kernel_w) kw = 0, ++kh;
        if (kh == kernel_h) kh = 0, ++c;
      }
      transpose16(r);
      const __mmask16 lanes = first_lanes(count);
      for (int64_t ow = 0; ow < out_w; ++ow) _mm512_mask_storeu_ps(out + ow * depth + k0, lanes, r[ow]);
    }
  }
}

void narrow_im2col(const float* image, float* columns, const Conv2dGeometry& g, int64_t channels) {
  const int64_t in_h = g.in_h, in_w = g.in_w, out_h = g.out_h, out_w = g.out_w;
  const int64_t kernel_h = g.kernel_h, kernel_w = g.kernel_w, positions = out_h * out_w;
  const __mmask16 out_lanes = first_lanes(out_w);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kh = 0; kh < kernel_h; ++kh) {
      float* tap_rows = columns + (c * kernel_h + kh) * kernel_w * positions;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        const float* row = image + (c * in_h + oh + kh) * in_w;
        for (int64_t kw = 0; kw < kernel_w; ++kw) {
          _mm512_mask_storeu_ps(tap_rows + kw * positions + oh * out_w, out_lanes,
                                _mm512_maskz_loadu_ps(out_lanes, row + kw));
        }
      }
    }
  }
}

void narrow_col2im(float* image, const float* columns, const Conv2dGeometry& g, int64_t channels) {
  const int64_t in_h = g.in_h, in_w = g.in_w, out_h = g.out_h, out_w = g.out_w;
  const int64_t kernel_h = g.kernel_h, kernel_w = g.kernel_w, positions = out_h * out_w;
  const __mmask16 row_lanes = first_lanes(in_w), out_lanes = first_lanes(out_w);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ih = 0; ih < in_h; ++ih) {
      __m512 sum = _mm512_setzero_ps();
      for (int64_t kh = 0; kh < kernel_h; ++kh) {
        const int64_t oh = ih - kh;  // the output row whose tap kh reads image row ih
        if (oh < 0 || oh >= out_h) continue;
        const float* tap_rows = columns + (c * kernel_h + kh) * kernel_w * positions + oh * out_w;
        for (int64_t kw = 0; kw < kernel_w; ++kw) {
          // Pixel l takes lane l - kw of tap kw's row (none for l < kw).
          const __m512i from = _mm512_sub_epi32(lane_numbers(), _mm512_set1_epi32(int32_t(kw)));
          const __m512 values = _mm512_maskz_loadu_ps(out_lanes, tap_rows + kw * positions);
          sum = _mm512_add_ps(
              sum, _mm512_maskz_permutexvar_ps(static_cast<__mmask16>(0xFFFFu << kw), from, values));
        }
      }
      _mm512_mask_storeu_ps(image + (c * in_h + ih) * in_w, row_lanes, sum);
    }
  }
}
#else
void narrow_im2col(const float*, float*, const Conv2dGeometry&, int64_t) {
  STRATA_CHECK(false, "strata::conv2d", "the narrow-image column loops are not compiled in");
}
void narrow_col2im(float*, const float*, const Conv2dGeometry&, int64_t) {
  STRATA_CHECK(false, "strata::conv2d", "the narrow-image column loops are not compiled in");
}
void narrow_im2row(const float*, float*, const Conv2dGeometry&, int64_t) {
  STRATA_CHECK(false, "strata::conv2d", "the narrow-image column loops are not compiled in");
}
#endif

}  // namespace strata::cpu
