#include "ops/nn_common.h"

#include "ops/elementwise_kernels.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"

namespace strata::nn_detail {

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor copy = make_empty_tensor(t.sizes(), t.dtype(), t.device(), "strata::contiguous");
  on_device::copy_kernel(copy, t);
  return copy;
}

std::optional<Tensor> contiguous(const std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return contiguous(*t);
}

std::array<int64_t, 2> expand_pair(IntArrayRef values, const char* op, const char* what) {
  STRATA_CHECK(values.size() == 1 || values.size() == 2, op, what,
               " takes 1 or 2 values (height, width), got ", values.size(), ": ",
               shape_string(values));
  return {values[0], values[values.size() - 1]};
}

cpu::Window2d sliding_window(IntArrayRef input_sizes, IntArrayRef kernel, IntArrayRef stride,
                             IntArrayRef padding, IntArrayRef dilation, const char* op) {
  const auto [kernel_h, kernel_w] = expand_pair(kernel, op, "kernel_size");
  const auto [stride_h, stride_w] = expand_pair(stride, op, "stride");
  const auto [pad_h, pad_w] = expand_pair(padding, op, "padding");
  const auto [dilation_h, dilation_w] = expand_pair(dilation, op, "dilation");
  STRATA_CHECK(kernel_h > 0 && kernel_w > 0, op, "kernel_size must be positive, got ",
               shape_string(kernel));
  STRATA_CHECK(stride_h > 0 && stride_w > 0, op, "stride must be positive, got ",
               shape_string(stride));
  STRATA_CHECK(pad_h >= 0 && pad_w >= 0, op, "padding must be non-negative, got ",
               shape_string(padding));
  STRATA_CHECK(dilation_h > 0 && dilation_w > 0, op, "dilation must be positive, got ",
               shape_string(dilation));
  const int64_t rank = static_cast<int64_t>(input_sizes.size());
  const int64_t in_h = input_sizes[rank - 2], in_w = input_sizes[rank - 1];
  // span = dilation * (kernel - 1) + 1 and padded = in + 2 * pad, refused past int64.
  int64_t span_h = 0, span_w = 0, padded_h = 0, padded_w = 0;
  const bool overflows =
      __builtin_mul_overflow(dilation_h, kernel_h - 1, &span_h) ||
      __builtin_mul_overflow(dilation_w, kernel_w - 1, &span_w) ||
      __builtin_add_overflow(span_h, 1, &span_h) || __builtin_add_overflow(span_w, 1, &span_w) ||
      __builtin_mul_overflow(pad_h, 2, &padded_h) || __builtin_mul_overflow(pad_w, 2, &padded_w) ||
      __builtin_add_overflow(padded_h, in_h, &padded_h) ||
      __builtin_add_overflow(padded_w, in_w, &padded_w);
  STRATA_CHECK(!overflows, op, "kernel_size ", shape_string(kernel), ", dilation ",
               shape_string(dilation), " and padding ", shape_string(padding),
               " give a window or padded input past 2^63 - 1 (input shape ",
               shape_string(input_sizes), ")");
  STRATA_CHECK(span_h <= padded_h && span_w <= padded_w, op, "kernel of size ", span_h, "x", span_w,
               " (with dilation ", shape_string(dilation), ") is larger than the padded input ",
               padded_h, "x", padded_w, " (input shape ", shape_string(input_sizes), ", padding ",
               shape_string(padding), ")");
  return cpu::Window2d{in_h,
                       in_w,
                       (padded_h - span_h) / stride_h + 1,
                       (padded_w - span_w) / stride_w + 1,
                       kernel_h,
                       kernel_w,
                       stride_h,
                       stride_w,
                       pad_h,
                       pad_w,
                       dilation_h,
                       dilation_w};
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  STRATA_CHECK(t.dtype() == kFloat32 || t.dtype() == kFloat64, op, what,
               " must be Float32 or Float64, got ", t.dtype());
}

void check_same_dtype(const Tensor& t, ScalarType expected, const char* op, const char* what) {
  STRATA_CHECK(t.dtype() == expected, op, what, " has dtype ", t.dtype(), " but the input has ",
               expected);
}

int64_t numel(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::optional<Tensor> optional_tensor_arg(OpArgs args, size_t i) {
  if (args[i].is_none()) return std::nullopt;
  return args[i].to_tensor();
}

int64_t check_channels_input(const Tensor& input, const char* op) {
  STRATA_CHECK(input.dim() >= 2, op, "expected an input [N, C, *] of rank at least 2, got shape ",
               shape_string(input.sizes()));
  STRATA_CHECK(is_floating_point(input.dtype()), op, "expected a floating-point input, got ",
               input.dtype());
  return input.size(1);
}

void check_per_channel(const std::optional<Tensor>& t, int64_t channels, const char* what,
                       const Tensor& input, const char* op) {
  if (!t) return;
  STRATA_CHECK(t->dim() == 1 && t->size(0) == channels, op, what, " must have shape [", channels,
               "] (one value per channel of the input of shape ", shape_string(input.sizes()),
               "), got ", shape_string(t->sizes()));
}

DimVector channel_shape(int64_t channels, int64_t rank) {
  DimVector shape(static_cast<size_t>(rank), 1);
  shape[1] = channels;
  return shape;
}

Tensor channel_affine(Tensor normalized, const std::optional<Tensor>& weight,
                      const std::optional<Tensor>& bias, IntArrayRef shape) {
  if (weight) normalized = normalized * weight->reshape(shape);
  if (bias) normalized = normalized + bias->reshape(shape);
  return normalized;
}

}  // namespace strata::nn_detail
