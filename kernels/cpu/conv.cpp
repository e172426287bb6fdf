// 2-D convolution and its two backward ops on the CPU: im2col + GEMM, in
// parallel over images (see Note [im2col convolution]).
#include "kernels/cpu/conv.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include "kernels/cpu/conv_narrow.h"
#include "kernels/cpu/conv_one_channel.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// Note [im2col convolution]
// For one image and one group the convolution is a matrix product: the weight slice
// [Og, K] (K = Cg * kH * kW) times the column matrix [K, P] (P = OH * OW), whose row
// (c, kh, kw) holds, for every output position, the input pixel that kernel tap sees
// (0 in the padding). Building the columns costs K * P writes, far less than the
// 2 * Og * K * P flops of the product, which the GEMM (kernels/cpu/gemm.h) runs near
// peak. The backward ops are its adjoints: the input gradient is W^T times the output gradient,
// added back onto the pixels through the same index map (col2im); the weight
// gradient is the output gradient times the columns' transpose, summed over images.
// A 1x1 kernel with stride 1 and no padding needs no columns: the image is its own
// column matrix.

template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixMap = Eigen::Map<RowMajorMatrix<T>>;

// Below this many flops per parallel chunk the TBB overhead would dominate.
constexpr int64_t kGemmGrainFlops = int64_t{1} << 20;
// The weight gradient is summed over at most this many fixed batch chunks, each in
// its own buffer, then over the chunks in order: the result does not depend on the
// thread count.
constexpr int64_t kWeightGradChunks = 16;

struct GroupShape {
  int64_t channels;      // Cg
  int64_t out_channels;  // Og
  int64_t depth;         // K = Cg * kH * kW
  int64_t positions;     // P = OH * OW
  int64_t plane;         // H * W
  int64_t flops;         // of one image-group product
};

GroupShape group_shape(const Conv2dGeometry& g) {
  GroupShape s;
  s.channels = g.in_channels / g.groups;
  s.out_channels = g.out_channels / g.groups;
  s.depth = s.channels * g.kernel_h * g.kernel_w;
  s.positions = g.out_h * g.out_w;
  s.plane = g.in_h * g.in_w;
  s.flops = std::max<int64_t>(1, 2 * s.out_channels * s.depth * s.positions);
  return s;
}

bool needs_columns(const Conv2dGeometry& g) {
  return !(g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
           g.pad_h == 0 && g.pad_w == 0);
}

int64_t grain_for(int64_t flops_per_item) {
  return std::max<int64_t>(1, kGemmGrainFlops / flops_per_item);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }  // a >= 0, b > 0

// A row of a column matrix is a few dozen values (one output row), too short for
// memmove's or a vector loop's set-up to pay: whole 32-byte blocks, each a few
// inline vector instructions. A copy's tail is one more block ending at the last
// value (rewriting some with the same values); a sum's tail goes value by value.
constexpr int64_t kSpanBytes = 32;

template <class T>
void copy_span(T* to, const T* from, int64_t count) {
  constexpr int64_t kBlock = kSpanBytes / static_cast<int64_t>(sizeof(T));
  if (count < kBlock) {
    for (int64_t i = 0; i < count; ++i) to[i] = from[i];
    return;
  }
  for (int64_t i = 0; i + kBlock <= count; i += kBlock) std::memcpy(to + i, from + i, kSpanBytes);
  std::memcpy(to + count - kBlock, from + count - kBlock, kSpanBytes);
}

template <class T>
void add_span(T* __restrict to, const T* __restrict from, int64_t count) {
  constexpr int64_t kBlock = kSpanBytes / static_cast<int64_t>(sizeof(T));
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) to[i + j] += from[i + j];
  }
  for (; i < count; ++i) to[i] += from[i];
}

// The output rows oh whose tap at offset `shift` lands in an image of `size` rows
// (0 <= oh * stride + shift < size): [begin, end), within [0, out).
struct InsideRange {
  int64_t begin, end;
};

InsideRange inside_range(int64_t shift, int64_t stride, int64_t size, int64_t out) {
  const int64_t begin = std::min(out, shift >= 0 ? 0 : ceil_div(-shift, stride));
  const int64_t end = std::clamp(shift >= size ? 0 : ceil_div(size - shift, stride), begin, out);
  return {begin, end};
}

// Moves values between one image-group [Cg, H, W] and its column matrix [K, P].
// kToColumns copies pixels into the columns (0 where a tap falls in the padding);
// otherwise each column entry is added back onto the pixel it came from (col2im).
// A row of the columns is a few dozen values, so the per-row work is kept to the
// copy itself: the rows and columns a tap sees inside the image are worked out once
// per tap, not per row.
template <bool kToColumns, class T>
void transfer_columns(std::conditional_t<kToColumns, const T*, T*> image,
                      std::conditional_t<kToColumns, T*, const T*> columns,
                      const Conv2dGeometry& geometry, int64_t channels) {
  // A local copy: the span copies are byte stores, which the compiler must otherwise
  // assume change the geometry, reloading it for every output row.
  const Conv2dGeometry g = geometry;
  const int64_t out_w = g.out_w, sw = g.stride_w;
  const int64_t positions = g.out_h * out_w;
  const int64_t row_step = g.stride_h * g.in_w;  // between the pixel rows of consecutive oh
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t shift_h = kh * g.dilation_h - g.pad_h;
      const InsideRange rows = inside_range(shift_h, g.stride_h, g.in_h, g.out_h);
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        auto* row = columns + ((c * g.kernel_h + kh) * g.kernel_w + kw) * positions;
        const int64_t shift = kw * g.dilation_w - g.pad_w;
        const InsideRange cols = inside_range(shift, sw, g.in_w, out_w);
        const int64_t width = cols.end - cols.begin;
        if (width == 0 || rows.begin == rows.end) {  // the tap sees only padding
          if constexpr (kToColumns) std::fill(row, row + positions, T(0));
          continue;
        }
        // The pixel under output (oh, cols.begin), from the first inside row on.
        auto* pixels = image + (c * g.in_h + rows.begin * g.stride_h + shift_h) * g.in_w +
                       cols.begin * sw + shift;
        auto* out_row = row + rows.begin * out_w + cols.begin;
        if constexpr (kToColumns) {
          std::fill(row, row + rows.begin * out_w, T(0));
          std::fill(row + rows.end * out_w, row + positions, T(0));
          const bool edges = width < out_w;
          for (int64_t oh = rows.begin; oh < rows.end; ++oh, pixels += row_step, out_row += out_w) {
            if (edges) {
              std::fill(out_row - cols.begin, out_row, T(0));
              std::fill(out_row + width, out_row - cols.begin + out_w, T(0));
            }
            if (sw == 1) {
              copy_span<T>(out_row, pixels, width);
            } else {
              for (int64_t i = 0; i < width; ++i) out_row[i] = pixels[i * sw];
            }
          }
        } else {
          for (int64_t oh = rows.begin; oh < rows.end; ++oh, pixels += row_step, out_row += out_w) {
            if (sw == 1) {
              add_span<T>(pixels, out_row, width);
            } else {
              for (int64_t i = 0; i < width; ++i) pixels[i * sw] += out_row[i];
            }
          }
        }
      }
    }
  }
}

// A scratch column matrix per parallel chunk, left uninitialized (im2col writes all of it).
template <class T>
std::unique_ptr<T[]> column_buffer(const Conv2dGeometry& g, const GroupShape& s) {
  return std::unique_ptr<T[]>(needs_columns(g) ? new T[s.depth * s.positions] : nullptr);
}

// The column matrix of image n, group grp: the image itself, or im2col into buffer.
template <class T>
const T* columns_of(const T* input, T* buffer, int64_t n, int64_t grp, const Conv2dGeometry& g,
                    const GroupShape& s) {
  const T* image = input + (n * g.in_channels + grp * s.channels) * s.plane;
  if (buffer == nullptr) return image;
  if constexpr (std::is_same_v<T, float>) {
    if (narrow_columns_apply(g, true)) {
      narrow_im2col(image, buffer, g, s.channels);
      return buffer;
    }
  }
  transfer_columns<true, T>(image, buffer, g, s.channels);
  return buffer;
}

// col2im of buffer onto image (channels planes), which it overwrites.
template <class T>
void image_from_columns(T* image, const T* buffer, const Conv2dGeometry& g, const GroupShape& s) {
  if constexpr (std::is_same_v<T, float>) {
    if (narrow_columns_apply(g, true)) {
      narrow_col2im(image, buffer, g, s.channels);
      return;
    }
  }
  std::fill(image, image + s.channels * s.plane, T(0));
  transfer_columns<false, T>(image, buffer, g, s.channels);
}

template <class T>
void forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor* bias,
             const Conv2dGeometry& g) {
  const GroupShape s = group_shape(g);
  const T* in = input.data_ptr<T>();
  const T* w = weight.data_ptr<T>();
  const T* b = bias != nullptr ? bias->data_ptr<T>() : nullptr;
  T* o = out.data_ptr<T>();
  const bool one_channel = one_channel_loops_apply(g, std::is_same_v<T, float>);
  parallel_for(0, g.batch * g.groups, grain_for(s.flops), [&](int64_t begin, int64_t end) {
    std::unique_ptr<T[]> buffer = one_channel ? nullptr : column_buffer<T>(g, s);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / g.groups, grp = item % g.groups;
      T* out_g = o + (n * g.out_channels + grp * s.out_channels) * s.positions;
      if constexpr (std::is_same_v<T, float>) {
        if (one_channel) {
          one_channel_forward(out_g, in + (n * g.in_channels + grp) * s.plane,
                              w + grp * s.out_channels * s.depth,
                              b != nullptr ? b + grp * s.out_channels : nullptr, s.out_channels, g);
          continue;
        }
      }
      const T* columns = columns_of(in, buffer.get(), n, grp, g, s);
      // [O, P] = W_g [O, D] @ columns [D, P]
      gemm<T>(s.out_channels, s.positions, s.depth, T(1), w + grp * s.out_channels * s.depth,
              s.depth, 1, columns, s.positions, 1, T(0), out_g, s.positions);
      if (b != nullptr) {
        MatrixMap<T> result(out_g, s.out_channels, s.positions);
        result.colwise() += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(
            b + grp * s.out_channels, s.out_channels);
      }
    }
  });
}

template <class T>
void backward_input(const Tensor& grad_input, const Tensor& grad_output, const Tensor& weight,
                    const Conv2dGeometry& g) {
  const GroupShape s = group_shape(g);
  const T* go = grad_output.data_ptr<T>();
  const T* w = weight.data_ptr<T>();
  T* gi = grad_input.data_ptr<T>();
  parallel_for(0, g.batch * g.groups, grain_for(s.flops), [&](int64_t begin, int64_t end) {
    std::unique_ptr<T[]> buffer = column_buffer<T>(g, s);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / g.groups, grp = item % g.groups;
      T* image = gi + (n * g.in_channels + grp * s.channels) * s.plane;
      // Without columns the product lands on the image directly (P == H * W).
      T* columns = buffer ? buffer.get() : image;
      // columns [D, P] = W_g^T [D, O] @ grad_output_g [O, P]
      gemm<T>(s.depth, s.positions, s.out_channels, T(1), w + grp * s.out_channels * s.depth, 1,
              s.depth, go + (n * g.out_channels + grp * s.out_channels) * s.positions, s.positions,
              1, T(0), columns, s.positions);
      if (buffer) image_from_columns(image, buffer.get(), g, s);
    }
  });
}

template <class T>
void backward_weight(const Tensor& grad_weight, const Tensor& grad_output, const Tensor& input,
                     const Conv2dGeometry& g) {
  const GroupShape s = group_shape(g);
  const T* go = grad_output.data_ptr<T>();
  const T* in = input.data_ptr<T>();
  T* gw = grad_weight.data_ptr<T>();
  const int64_t weight_numel = g.out_channels * s.depth;
  if (g.batch == 0) {
    std::fill(gw, gw + weight_numel, T(0));
    return;
  }
  const int64_t chunk_size = ceil_div(g.batch, std::min(g.batch, kWeightGradChunks));
  const int64_t chunks = ceil_div(g.batch, chunk_size);
  std::unique_ptr<T[]> partials(chunks > 1 ? new T[chunks * weight_numel] : nullptr);
  const bool one_channel = one_channel_loops_apply(g, std::is_same_v<T, float>);
  // Groups write disjoint slices of the gradient, so they run in parallel too: a
  // batch of per-sample weight gradients is one image with a group per sample.
  parallel_for(
      0, chunks * g.groups, grain_for(chunk_size * s.flops), [&](int64_t begin, int64_t end) {
        std::unique_ptr<T[]> buffer = one_channel ? nullptr : column_buffer<T>(g, s);
        for (int64_t item = begin; item < end; ++item) {
          const int64_t chunk = item / g.groups, grp = item % g.groups;
          T* sum = (chunks > 1 ? partials.get() + chunk * weight_numel : gw) +
                   grp * s.out_channels * s.depth;
          const int64_t first = chunk * chunk_size;
          for (int64_t n = first; n < std::min(g.batch, first + chunk_size); ++n) {
            const T* grad = go + (n * g.out_channels + grp * s.out_channels) * s.positions;
            if constexpr (std::is_same_v<T, float>) {
              if (one_channel) {
                one_channel_weight_grad(sum, grad, in + (n * g.in_channels + grp) * s.plane,
                                        s.out_channels, g, n != first);
                continue;
              }
            }
            if constexpr (std::is_same_v<T, float>) {
              if (buffer && narrow_columns_apply(g, true)) {
                // sum_g [O, D] (+)= grad_output_g [O, P] @ rows [P, D]
                narrow_im2row(in + (n * g.in_channels + grp * s.channels) * s.plane,
                              buffer.get(), g, s.channels);
                gemm<T>(s.out_channels, s.depth, s.positions, T(1), grad, s.positions, 1,
                        buffer.get(), s.depth, 1, n == first ? T(0) : T(1), sum, s.depth);
                continue;
              }
            }
            const T* columns = columns_of(in, buffer.get(), n, grp, g, s);
            // sum_g [O, D] (+)= grad_output_g [O, P] @ columns^T [P, D]
            gemm<T>(s.out_channels, s.depth, s.positions, T(1), grad, s.positions, 1, columns, 1,
                    s.positions, n == first ? T(0) : T(1), sum, s.depth);
          }
        }
      });
  if (chunks > 1) {
    using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
    Eigen::Map<Vector> total(gw, weight_numel);
    total = Eigen::Map<const Vector>(partials.get(), weight_numel);
    for (int64_t chunk = 1; chunk < chunks; ++chunk) {
      total += Eigen::Map<const Vector>(partials.get() + chunk * weight_numel, weight_numel);
    }
  }
}

}  // namespace

void conv2d_forward_kernel(const Tensor& out, const Tensor& input, const Tensor& weight,
                           const Tensor* bias, const Conv2dGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::conv2d",
                                 [&] { forward<scalar_t>(out, input, weight, bias, g); });
}

void conv2d_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                  const Tensor& weight, const Conv2dGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "strata::conv2d_backward_input", [&] {
    backward_input<scalar_t>(grad_input, grad_output, weight, g);
  });
}

void conv2d_backward_weight_kernel(const Tensor& grad_weight, const Tensor& grad_output,
                                   const Tensor& input, const Conv2dGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(grad_weight.dtype(), "strata::conv2d_backward_weight", [&] {
    backward_weight<scalar_t>(grad_weight, grad_output, input, g);
  });
}

}  // namespace strata::cpu
