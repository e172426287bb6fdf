#pragma once

#include <cstdint>

#include "kernels/cpu/conv.h"

namespace strata::cpu {

// Note [Column matrices of narrow images in vectors]
// im2col copies, per channel and kernel tap, one output row's worth of pixels at a
// time: a CNN's later layers have rows of a dozen pixels, so a column matrix is
// thousands of copies of a dozen values, each paying a copy's set-up (and col2im
// thousands of such sums, each reading what the one before wrote). When a whole
// image row fits one vector (in_w <= 16 floats) at stride 1 without padding or
// dilation, a tap's copy of a row is one masked load at the tap's offset and one
// masked store; col2im gathers instead of scattering: each image row is the sum,
// in a register, of the column rows that read it, shifted into place (a permute
// each), and is stored once (no zeroing pass). AVX-512 and Float32 only;
// otherwise the copies.
bool narrow_columns_apply(const Conv2dGeometry& g, bool is_float);

// `channels` planes of image [channels, in_h, in_w] to columns [channels * kH * kW,
// out_h * out_w], and back: narrow_col2im writes every pixel of the planes.
void narrow_im2col(const float* image, float* columns, const Conv2dGeometry& g, int64_t channels);
void narrow_col2im(float* image, const float* columns, const Conv2dGeometry& g, int64_t channels);
// The column matrix's transpose, rows [out_h * out_w, channels * kH * kW]: the weight
// gradient's product then has a row-major right operand, which the broadcast loop
// takes without the packing a blocked GEMM does for a column-major one. Sixteen
// column rows at a time are loaded as above and transposed in registers.
void narrow_im2row(const float* image, float* rows, const Conv2dGeometry& g, int64_t channels);

}  // namespace strata::cpu
