// 2-D max and average pooling and their backward kernels, in parallel over planes.
#include "kernels/cpu/pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kernels/cpu/parallel.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }  // a >= 0, b > 0

// The taps [begin, end) of a window that starts at `start` and steps by `dilation`
// which land inside [0, size).
struct TapRange {
  int64_t begin, end;
};

TapRange taps_inside(int64_t start, int64_t kernel, int64_t dilation, int64_t size) {
  const int64_t begin = start >= 0 ? 0 : std::min(kernel, ceil_div(-start, dilation));
  const int64_t end = start >= size ? 0 : std::min(kernel, ceil_div(size - start, dilation));
  return {begin, std::max(begin, end)};
}

// The taps of each output row and column that land inside the image. They depend
// on the geometry only, so they are worked out once per call: per window they
// would cost four integer divisions, more than a small window's arithmetic.
struct WindowTaps {
  std::vector<TapRange> rows, cols;
  // For each kernel column kw, the output columns whose tap kw lands in the image.
  std::vector<TapRange> outputs_of_tap;
  explicit WindowTaps(const Pool2dGeometry& g) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      rows.push_back(taps_inside(oh * g.stride_h - g.pad_h, g.kernel_h, g.dilation_h, g.in_h));
    }
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      cols.push_back(taps_inside(ow * g.stride_w - g.pad_w, g.kernel_w, g.dilation_w, g.in_w));
    }
    for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
      outputs_of_tap.push_back(
          taps_inside(kw * g.dilation_w - g.pad_w, g.out_w, g.stride_w, g.in_w));
    }
  }
};

// Calls fn(pixel) for each pixel (ih * in_w + iw) of output (oh, ow)'s window that
// lies in the image, in row-major order.
template <class Fn>
void for_each_window_pixel(const Pool2dGeometry& g, const WindowTaps& taps, int64_t oh, int64_t ow,
                           Fn&& fn) {
  const int64_t h_start = oh * g.stride_h - g.pad_h, w_start = ow * g.stride_w - g.pad_w;
  const TapRange rows = taps.rows[oh], cols = taps.cols[ow];
  for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
    const int64_t row = (h_start + kh * g.dilation_h) * g.in_w + w_start;
    for (int64_t kw = cols.begin; kw < cols.end; ++kw) fn(row + kw * g.dilation_w);
  }
}

// Calls fn(plane, geometry) for every plane, in parallel when the planes hold enough
// work. fn gets a copy of g local to its thread's loop, which the compiler can keep
// in registers: through a reference it would reload the fields after every store to
// an Int64 output, which might alias them.
template <class Fn>
void for_each_plane(const Pool2dGeometry& g, Fn&& fn) {
  const int64_t work = std::max<int64_t>(1, g.out_h * g.out_w * g.kernel_h * g.kernel_w);
  parallel_for(0, g.planes, std::max<int64_t>(1, kElementwiseGrain / work),
               [&](int64_t begin, int64_t end) {
                 const Pool2dGeometry local = g;
                 for (int64_t p = begin; p < end; ++p) fn(p, local);
               });
}

// Whether pixel value x beats the best of a window so far: NaN counts as the
// maximum, and of equal values the first stays.
template <class T>
bool beats(T x, T best) {
  return (x > best) | std::isnan(x);
}

// Note [Pooling 2 x 2 windows]
// The CNNs' pooling is 2 x 2 windows without padding, at stride 2 (most CNNs)
// or 1 (the tempered-sigmoid CNN of examples/dp_sgd_distributed.cpp). Its own
// loop keeps each window's best value and pixel in registers over four unrolled
// taps. Whether a tap wins is a coin toss on real data, so the loop must
// not branch on it: g++ 12 turns a pair of selects on one condition into a branch,
// mispredicted half the time, hence the pixel's arithmetic select. The general
// loop below takes about three times as long on these windows.
bool is_2x2_unpadded(const Pool2dGeometry& g) {
  return g.kernel_h == 2 && g.kernel_w == 2 && g.pad_h == 0 && g.pad_w == 0 && g.dilation_h == 1 &&
         g.dilation_w == 1;
}

template <class T>
void max_pool_2x2(T* out, int64_t* where, const T* pixels, const Pool2dGeometry& g) {
  const int64_t in_w = g.in_w, out_w = g.out_w;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    for (int64_t ow = 0; ow < out_w; ++ow) {
      const int64_t corner = oh * g.stride_h * in_w + ow * g.stride_w;
      T best = pixels[corner];
      int64_t best_pixel = corner;
      for (const int64_t pixel : {corner + 1, corner + in_w, corner + in_w + 1}) {
        const T x = pixels[pixel];
        const bool take = beats(x, best);
        best = take ? x : best;
        best_pixel += static_cast<int64_t>(take) * (pixel - best_pixel);
      }
      out[oh * out_w + ow] = best;
      where[oh * out_w + ow] = best_pixel;
    }
  }
}

#if defined(__AVX512F__)
// Note [Pooling rows of 2 x 2 windows in vectors]
// At column stride 2 (windows side by side) a row of windows reads two input rows
// of which the even columns are every window's left taps and the odd ones its
// right taps: 16 windows are two 16-float loads per input row, split by one
// permute each, and each tap is a compare and a masked move for all 16, the taps
// taken in the scalar loop's order (NaN wins, ties keep the first).
struct RowChunk {
  __mmask16 outputs, low, high;  // the chunk's windows; its pixels in each 16-float half
};

RowChunk row_chunk(int64_t count) {  // 0 < count <= 16 windows
  const auto bits = [](int64_t n) { return static_cast<__mmask16>((uint32_t{1} << n) - 1); };
  return {bits(count), bits(std::min<int64_t>(16, 2 * count)),
          bits(std::max<int64_t>(0, 2 * count - 16))};
}

const __m512i kEven = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
const __m512i kOdd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);

// The windows of one plane, a row of windows at a time (the top-left pixel of row
// oh's first window is oh * row_step), 16 windows a step; `tap` is each window's
// maximum's offset from its top-left pixel. The loads, stores and masks a row's
// last step does not need (no second 16 pixels, no second 8 indices) are skipped.
void max_pool_2x2_plane(float* out, int64_t* where, const float* pixels, int64_t row_step,
                        int64_t in_w, int64_t out_h, int64_t out_w) {
  const __m512i corner_offsets = _mm512_mullo_epi32(_mm512_set1_epi32(2), _mm512_setr_epi32(
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m512i taps[4] = {_mm512_setzero_si512(), _mm512_set1_epi32(1),
                           _mm512_set1_epi32(static_cast<int32_t>(in_w)),
                           _mm512_set1_epi32(static_cast<int32_t>(in_w + 1))};
  for (int64_t oh = 0; oh < out_h; ++oh, out += out_w, where += out_w) {
    const int64_t first_pixel = oh * row_step;
    for (int64_t ow = 0; ow < out_w; ow += 16) {
      const int64_t count = std::min<int64_t>(16, out_w - ow);
      const RowChunk m = row_chunk(count);
      const float* top = pixels + first_pixel + 2 * ow;
      __m512 values[4];
      for (int r = 0; r < 2; ++r) {
        const __m512 low = _mm512_maskz_loadu_ps(m.low, top + r * in_w);
        const __m512 high = count > 8 ? _mm512_maskz_loadu_ps(m.high, top + r * in_w + 16)
                                      : _mm512_setzero_ps();
        values[2 * r] = _mm512_permutex2var_ps(low, kEven, high);
        values[2 * r + 1] = _mm512_permutex2var_ps(low, kOdd, high);
      }
      __m512 best = values[0];
      __m512i tap = taps[0];
      for (int t = 1; t < 4; ++t) {
        const __mmask16 take = _mm512_cmp_ps_mask(values[t], best, _CMP_GT_OQ) |
                               _mm512_cmp_ps_mask(values[t], values[t], _CMP_UNORD_Q);
        best = _mm512_mask_mov_ps(best, take, values[t]);
        tap = _mm512_mask_mov_epi32(tap, take, taps[t]);
      }
      _mm512_mask_storeu_ps(out + ow, m.outputs, best);
      const __m512i offsets = _mm512_add_epi32(corner_offsets, tap);
      const __m512i base = _mm512_set1_epi64(first_pixel + 2 * ow);
      _mm512_mask_storeu_epi64(
          where + ow, static_cast<__mmask8>(m.outputs),
          _mm512_add_epi64(base, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(offsets))));
      if (count > 8) {
        _mm512_mask_storeu_epi64(
            where + ow + 8, static_cast<__mmask8>(m.outputs >> 8),
            _mm512_add_epi64(base, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(offsets, 1))));
      }
    }
  }
}

// Whether a plane's 2 x 2 windows run through the vector rows: windows side by
// side in each row, and offsets within a plane that fit 32 bits.
bool vector_rows(const Pool2dGeometry& g) {
  return is_2x2_unpadded(g) && g.stride_w == 2 && g.in_h * g.in_w < (int64_t{1} << 30);
}
#endif

// A row of outputs at a time, tap by tap (in each window's row-major order), so the
// innermost loop runs along the output row with selects the compiler vectorizes.
template <class T>
void max_pool(const Tensor& values, const Tensor& indices, const Tensor& input,
              const Pool2dGeometry& g) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const T* in = input.data_ptr<T>();
  T* out = values.data_ptr<T>();
  int64_t* where = indices.data_ptr<int64_t>();
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    if (vector_rows(g)) {
      for_each_plane(g, [&](int64_t p, const Pool2dGeometry& geo) {
        max_pool_2x2_plane(out + p * out_plane, where + p * out_plane, in + p * in_plane,
                           geo.stride_h * geo.in_w, geo.in_w, geo.out_h, geo.out_w);
      });
      return;
    }
  }
#endif
  if (is_2x2_unpadded(g)) {
    for_each_plane(g, [&](int64_t p, const Pool2dGeometry& geo) {
      max_pool_2x2(out + p * out_plane, where + p * out_plane, in + p * in_plane, geo);
    });
    return;
  }
  const WindowTaps taps(g);
  for_each_plane(g, [&](int64_t p, const Pool2dGeometry& geo) {
    const T* pixels = in + p * in_plane;
    for (int64_t oh = 0; oh < geo.out_h; ++oh) {
      T* best = out + p * out_plane + oh * geo.out_w;
      int64_t* best_pixel = where + p * out_plane + oh * geo.out_w;
      // -1: no pixel yet, so a window's first pixel always wins (every window holds
      // one: pool_geometry checks the padding).
      std::fill(best, best + geo.out_w, T(0));
      std::fill(best_pixel, best_pixel + geo.out_w, int64_t{-1});
      const TapRange rows = taps.rows[oh];
      for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
        const int64_t ih = oh * geo.stride_h - geo.pad_h + kh * geo.dilation_h;
        for (int64_t kw = 0; kw < geo.kernel_w; ++kw) {
          const int64_t shift = kw * geo.dilation_w - geo.pad_w;
          const TapRange outputs = taps.outputs_of_tap[kw];
          for (int64_t ow = outputs.begin; ow < outputs.end; ++ow) {
            const int64_t pixel = ih * geo.in_w + ow * geo.stride_w + shift;
            const T x = pixels[pixel];
            // Written as selects, which g++ 12 still compiles to a branch here:
            // the slow case of Note [Pooling 2 x 2 windows].
            const bool take = (best_pixel[ow] < 0) | beats(x, best[ow]);
            best[ow] = take ? x : best[ow];
            best_pixel[ow] = take ? pixel : best_pixel[ow];
          }
        }
      }
    }
  });
}

template <class T>
void max_pool_backward(const Tensor& grad_input, const Tensor& grad_output, const Tensor& indices,
                       const Pool2dGeometry& g) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const T* go = grad_output.data_ptr<T>();
  const int64_t* where = indices.data_ptr<int64_t>();
  T* gi = grad_input.data_ptr<T>();
  for_each_plane(g, [&](int64_t p, const Pool2dGeometry&) {
    T* plane = gi + p * in_plane;
    std::fill(plane, plane + in_plane, T(0));
    for (int64_t o = p * out_plane; o < (p + 1) * out_plane; ++o) {
      STRATA_CHECK(where[o] >= 0 && where[o] < in_plane, "strata::max_pool2d_backward", "index ",
                   where[o], " is out of range for an input plane of ", g.in_h, "x", g.in_w);
      plane[where[o]] += go[o];
    }
  });
}

template <class T>
void avg_pool(const Tensor& out, const Tensor& input, const Pool2dGeometry& g) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const T scale = T(1) / static_cast<T>(g.kernel_h * g.kernel_w);
  const T* in = input.data_ptr<T>();
  T* o = out.data_ptr<T>();
  const WindowTaps taps(g);
  for_each_plane(g, [&](int64_t p, const Pool2dGeometry& geo) {
    const T* pixels = in + p * in_plane;
    for (int64_t oh = 0; oh < geo.out_h; ++oh) {
      for (int64_t ow = 0; ow < geo.out_w; ++ow) {
        T sum = T(0);
        for_each_window_pixel(geo, taps, oh, ow, [&](int64_t pixel) { sum += pixels[pixel]; });
        o[p * out_plane + oh * geo.out_w + ow] = sum * scale;
      }
    }
  });
}

template <class T>
void avg_pool_backward(const Tensor& grad_input, const Tensor& grad_output,
                       const Pool2dGeometry& g) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const T scale = T(1) / static_cast<T>(g.kernel_h * g.kernel_w);
  const T* go = grad_output.data_ptr<T>();
  T* gi = grad_input.data_ptr<T>();
  const WindowTaps taps(g);
  for_each_plane(g, [&](int64_t p, const Pool2dGeometry& geo) {
    T* plane = gi + p * in_plane;
    std::fill(plane, plane + in_plane, T(0));
    for (int64_t oh = 0; oh < geo.out_h; ++oh) {
      for (int64_t ow = 0; ow < geo.out_w; ++ow) {
        const T share = go[p * out_plane + oh * geo.out_w + ow] * scale;
        for_each_window_pixel(geo, taps, oh, ow, [&](int64_t pixel) { plane[pixel] += share; });
      }
    }
  });
}

}  // namespace

void max_pool2d_kernel(const Tensor& values, const Tensor& indices, const Tensor& input,
                       const Pool2dGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(values.dtype(), "strata::max_pool2d_with_indices",
                                 [&] { max_pool<scalar_t>(values, indices, input, g); });
}

void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& indices, const Pool2dGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "strata::max_pool2d_backward", [&] {
    max_pool_backward<scalar_t>(grad_input, grad_output, indices, g);
  });
}

void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const Pool2dGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::avg_pool2d",
                                 [&] { avg_pool<scalar_t>(out, input, g); });
}

void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Pool2dGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "strata::avg_pool2d_backward",
                                 [&] { avg_pool_backward<scalar_t>(grad_input, grad_output, g); });
}

}  // namespace strata::cpu
