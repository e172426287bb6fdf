#pragma once

// Argument handling shared by the neural-network operators (ops/nn_*.cpp,
// ops/softmax.cpp): the kernels under kernels/cpu/ take contiguous tensors of one
// floating dtype, and these helpers get the arguments into that form or say why not;
// the shape functions and FLOP counts of the rows read the boxed arguments with them.

#include <array>
#include <cstdint>
#include <optional>

#include "dispatcher/op_def.h"
#include "kernels/cpu/window2d.h"
#include "tensor/tensor.h"

namespace strata::nn_detail {

// t itself when contiguous, else a contiguous copy.
Tensor contiguous(const Tensor& t);
std::optional<Tensor> contiguous(const std::optional<Tensor>& t);

// PyTorch's int[2] broadcasting: one value stands for both spatial dims. `what`
// names the argument ("stride") in the error.
std::array<int64_t, 2> expand_pair(IntArrayRef values, const char* op, const char* what);

// The window of a convolution or pooling over the last two dims of input_sizes,
// with kernel, stride, padding and dilation given as 1 or 2 values each. Checks
// that they are positive (padding non-negative) and that the dilated kernel fits
// the padded input, naming the op and the shapes.
cpu::Window2d sliding_window(IntArrayRef input_sizes, IntArrayRef kernel, IntArrayRef stride,
                             IntArrayRef padding, IntArrayRef dilation, const char* op);

// Throws unless t is Float32 or Float64.
void check_floating(const Tensor& t, const char* op, const char* what);
// Throws unless t has dtype `expected`; `what` names t in the message.
void check_same_dtype(const Tensor& t, ScalarType expected, const char* op, const char* what);

// The number of elements of a tensor of these sizes.
int64_t numel(IntArrayRef sizes);
// Boxed argument i of a `Tensor?` parameter.
std::optional<Tensor> optional_tensor_arg(OpArgs args, size_t i);

// The normalisations over channels (group_norm, batch_norm): checks an input
// [N, C, *] of a floating dtype and returns C.
int64_t check_channels_input(const Tensor& input, const char* op);
// Throws unless a per-channel tensor (weight, bias, running statistic), if given,
// has shape [channels]; `what` names it.
void check_per_channel(const std::optional<Tensor>& t, int64_t channels, const char* what,
                       const Tensor& input, const char* op);
// [1, C, 1, ...]: a per-channel tensor broadcast against an input of `rank` dims.
DimVector channel_shape(int64_t channels, int64_t rank);
// normalized * weight + bias, each per channel (of shape `shape`) and optional.
Tensor channel_affine(Tensor normalized, const std::optional<Tensor>& weight,
                      const std::optional<Tensor>& bias, IntArrayRef shape);

}  // namespace strata::nn_detail
