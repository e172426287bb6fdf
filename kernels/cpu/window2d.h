#pragma once

#include <cstdint>

namespace strata::cpu {

// A window sliding over [H, W] planes: the geometry convolution and pooling share.
// Output position (oh, ow) sees input rows oh * stride_h - pad_h + kh * dilation_h
// for kh < kernel_h, and likewise columns.
struct Window2d {
  int64_t in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
};

}  // namespace strata::cpu
