// 2-D convolution: conv2d and the two ops of its backward, conv2d_backward_input and
// conv2d_backward_weight (kernels in kernels/cpu/conv.cpp).
#include <string>
#include <utility>

#include "dispatcher/op_def.h"
#include "kernels/cpu/conv.h"
#include "kernels/cuda/nn.h"
#include "ops/device_choice.h"
#include "ops/nn_backward.h"
#include "ops/nn_common.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata::nn {
namespace {

using nn_detail::check_floating;
using nn_detail::check_same_dtype;
using nn_detail::contiguous;
using nn_detail::numel;
using nn_detail::sliding_window;

using Conv2dSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                         IntArrayRef, IntArrayRef, int64_t);
using BackwardInputSig = Tensor(const Tensor&, IntArrayRef, const Tensor&, IntArrayRef, IntArrayRef,
                                IntArrayRef, int64_t);
using BackwardWeightSig = Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef,
                                 IntArrayRef, IntArrayRef, int64_t);

// Checks what the three ops share and works out the output size.
cpu::Conv2dGeometry conv_geometry(IntArrayRef input_sizes, IntArrayRef weight_sizes,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                  int64_t groups, const char* op) {
  STRATA_CHECK(input_sizes.size() == 4, op, "expected a 4-D input [N, C, H, W], got shape ",
               shape_string(input_sizes));
  STRATA_CHECK(weight_sizes.size() == 4, op,
               "expected a 4-D weight [O, C / groups, kH, kW], got shape ",
               shape_string(weight_sizes));
  STRATA_CHECK(groups > 0, op, "groups must be positive, got ", groups);

  const int64_t channels = input_sizes[1], out_channels = weight_sizes[0];
  STRATA_CHECK(channels % groups == 0, op, "input channels (", channels, ", input shape ",
               shape_string(input_sizes), ") are not divisible by groups = ", groups);
  STRATA_CHECK(out_channels % groups == 0, op, "output channels (", out_channels, ", weight shape ",
               shape_string(weight_sizes), ") are not divisible by groups = ", groups);
  int64_t expected = 0;  // weight.size(1) * groups, which a huge groups can overflow
  const bool overflows = __builtin_mul_overflow(weight_sizes[1], groups, &expected);
  STRATA_CHECK(!overflows && expected == channels, op, "input of shape ", shape_string(input_sizes),
               " has ", channels, " channels but weight of shape ", shape_string(weight_sizes),
               " with groups = ", groups, " expects weight.size(1) * groups = ",
               overflows ? std::string("more than 2^63 - 1") : std::to_string(expected));

  cpu::Conv2dGeometry g;
  static_cast<cpu::Window2d&>(g) = sliding_window(
      input_sizes, IntArrayRef(weight_sizes.data() + 2, 2), stride, padding, dilation, op);
  g.batch = input_sizes[0];
  g.in_channels = channels;
  g.out_channels = out_channels;
  g.groups = groups;
  return g;
}

DimVector output_sizes(const cpu::Conv2dGeometry& g) {
  return {g.batch, g.out_channels, g.out_h, g.out_w};
}

void check_grad_output(const Tensor& grad_output, const cpu::Conv2dGeometry& g, ScalarType dtype,
                       const char* op) {
  check_same_dtype(grad_output, dtype, op, "grad_output");
  const DimVector expected = output_sizes(g);
  STRATA_CHECK(grad_output.sizes() == IntArrayRef(expected), op, "grad_output has shape ",
               shape_string(grad_output.sizes()), " but the convolution's output has shape ",
               shape_string(expected));
}

// Each op's checks, shared by its kernel and its shape function.
cpu::Conv2dGeometry conv2d_checked(const Tensor& input, const Tensor& weight,
                                   const std::optional<Tensor>& bias, IntArrayRef stride,
                                   IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  constexpr const char* op = "strata::conv2d";
  const cpu::Conv2dGeometry g =
      conv_geometry(input.sizes(), weight.sizes(), stride, padding, dilation, groups, op);
  check_floating(input, op, "input");
  check_same_dtype(weight, input.dtype(), op, "weight");
  if (bias) {
    check_same_dtype(*bias, input.dtype(), op, "bias");
    STRATA_CHECK(bias->dim() == 1 && bias->sizes()[0] == g.out_channels, op, "bias has shape ",
                 shape_string(bias->sizes()), ", expected [", g.out_channels, "]");
  }
  return g;
}

cpu::Conv2dGeometry backward_input_checked(const Tensor& grad_output, IntArrayRef input_sizes,
                                           const Tensor& weight, IntArrayRef stride,
                                           IntArrayRef padding, IntArrayRef dilation,
                                           int64_t groups) {
  constexpr const char* op = "strata::conv2d_backward_input";
  const cpu::Conv2dGeometry g =
      conv_geometry(input_sizes, weight.sizes(), stride, padding, dilation, groups, op);
  check_floating(weight, op, "weight");
  check_grad_output(grad_output, g, weight.dtype(), op);
  return g;
}

cpu::Conv2dGeometry backward_weight_checked(const Tensor& grad_output, const Tensor& input,
                                            IntArrayRef weight_sizes, IntArrayRef stride,
                                            IntArrayRef padding, IntArrayRef dilation,
                                            int64_t groups) {
  constexpr const char* op = "strata::conv2d_backward_weight";
  const cpu::Conv2dGeometry g =
      conv_geometry(input.sizes(), weight_sizes, stride, padding, dilation, groups, op);
  check_floating(input, op, "input");
  check_grad_output(grad_output, g, input.dtype(), op);
  return g;
}

Tensor conv2d_cpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const cpu::Conv2dGeometry g =
      conv2d_checked(input, weight, bias, stride, padding, dilation, groups);
  Tensor out = make_empty_tensor(output_sizes(g), input.dtype(), input.device(), "strata::conv2d");
  const std::optional<Tensor> bias_data = contiguous(bias);
  (on_device::any_cuda(out, input, weight, bias) ? gpu::conv2d_forward_kernel
                                                 : cpu::conv2d_forward_kernel)(
      out, contiguous(input), contiguous(weight), bias_data ? &*bias_data : nullptr, g);
  return out;
}

Tensor conv2d_backward_input_cpu(const Tensor& grad_output, IntArrayRef input_sizes,
                                 const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                                 IntArrayRef dilation, int64_t groups) {
  const cpu::Conv2dGeometry g =
      backward_input_checked(grad_output, input_sizes, weight, stride, padding, dilation, groups);
  Tensor grad_input = make_empty_tensor(input_sizes, weight.dtype(), weight.device(),
                                        "strata::conv2d_backward_input");
  (on_device::any_cuda(grad_input, grad_output, weight) ? gpu::conv2d_backward_input_kernel
                                                        : cpu::conv2d_backward_input_kernel)(
      grad_input, contiguous(grad_output), contiguous(weight), g);
  return grad_input;
}

Tensor conv2d_backward_weight_cpu(const Tensor& grad_output, const Tensor& input,
                                  IntArrayRef weight_sizes, IntArrayRef stride, IntArrayRef padding,
                                  IntArrayRef dilation, int64_t groups) {
  const cpu::Conv2dGeometry g =
      backward_weight_checked(grad_output, input, weight_sizes, stride, padding, dilation, groups);
  Tensor grad_weight = make_empty_tensor(weight_sizes, input.dtype(), input.device(),
                                         "strata::conv2d_backward_weight");
  (on_device::any_cuda(grad_weight, grad_output, input) ? gpu::conv2d_backward_weight_kernel
                                                        : cpu::conv2d_backward_weight_kernel)(
      grad_weight, contiguous(grad_output), contiguous(input), g);
  return grad_weight;
}

// ---- derivatives (Note [Derivative formulas])
// conv2d is bilinear in (input, weight); conv2d_backward_input and
// conv2d_backward_weight are its adjoints in either operand, so each is bilinear too
// and all the derivatives are the three ops again. Arguments 3-6 of conv2d
// (stride, padding, dilation, groups) sit at 3-6 in the backward ops as well.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

struct ConvParams {
  IntArrayRef stride, padding, dilation;
  int64_t groups;
};

ConvParams conv_params(const autograd::FormulaArguments& c) {
  return {c.int_list_arg(3), c.int_list_arg(4), c.int_list_arg(5), c.int_arg(6)};
}

void conv2d_backward(BackwardContext& c) {
  const ConvParams p = conv_params(c);
  const Tensor& g = c.grad();
  if (c.needs_grad(0)) {
    c.set_grad(0, conv2d_backward_input(g, c.input_sizes(0), c.input(1), p.stride, p.padding,
                                        p.dilation, p.groups));
  }
  if (c.needs_grad(1)) {
    c.set_grad(1, conv2d_backward_weight(g, c.input(0), c.input_sizes(1), p.stride, p.padding,
                                         p.dilation, p.groups));
  }
  if (c.needs_grad(2)) c.set_grad(2, g.sum({0, 2, 3}));
}

// grad_input = B_x(grad_output, weight), the adjoint of x -> conv2d(x, weight).
void conv2d_backward_input_backward(BackwardContext& c) {
  const ConvParams p = conv_params(c);
  const Tensor& g = c.grad();  // of the input's shape
  if (c.needs_grad(0)) {
    c.set_grad(0, conv2d(g, c.input(2), std::nullopt, p.stride, p.padding, p.dilation, p.groups));
  }
  if (c.needs_grad(2)) {
    c.set_grad(2, conv2d_backward_weight(c.input(0), g, c.input_sizes(2), p.stride, p.padding,
                                         p.dilation, p.groups));
  }
}

// grad_weight = B_w(grad_output, input), the adjoint of w -> conv2d(input, w).
void conv2d_backward_weight_backward(BackwardContext& c) {
  const ConvParams p = conv_params(c);
  const Tensor& g = c.grad();  // of the weight's shape
  if (c.needs_grad(0)) {
    c.set_grad(0, conv2d(c.input(1), g, std::nullopt, p.stride, p.padding, p.dilation, p.groups));
  }
  if (c.needs_grad(1)) {
    c.set_grad(1, conv2d_backward_input(c.input(0), c.input_sizes(1), g, p.stride, p.padding,
                                        p.dilation, p.groups));
  }
}

// Forward formulas: a bilinear op's tangent is one convolution per operand with
// a tangent (autograd::bilinear_tangent).
// The bias's tangent is added by the kernel of the first convolution term; with
// neither input nor weight tangents it is the tangent alone, broadcast.
void conv2d_forward(ForwardContext& c) {
  const ConvParams p = conv_params(c);
  std::optional<Tensor> bias;
  if (c.has_tangent(2)) bias = c.tangent(2);
  auto conv = [&](const Tensor& input, const Tensor& weight) {
    return conv2d(input, weight, std::exchange(bias, std::nullopt), p.stride, p.padding, p.dilation,
                  p.groups);
  };
  Tensor tangent = autograd::bilinear_tangent(c, 0, 1, conv);
  if (bias) tangent = bias->view({1, bias->size(0), 1, 1});
  c.set_tangent(0, std::move(tangent));
}

void conv2d_backward_input_forward(ForwardContext& c) {
  const ConvParams p = conv_params(c);
  const IntArrayRef input_sizes = c.int_list_arg(1);
  c.set_tangent(0,
                autograd::bilinear_tangent(c, 0, 2, [&](const Tensor& grad, const Tensor& weight) {
                  return conv2d_backward_input(grad, input_sizes, weight, p.stride, p.padding,
                                               p.dilation, p.groups);
                }));
}

void conv2d_backward_weight_forward(ForwardContext& c) {
  const ConvParams p = conv_params(c);
  const IntArrayRef weight_sizes = c.int_list_arg(2);
  c.set_tangent(0,
                autograd::bilinear_tangent(c, 0, 1, [&](const Tensor& grad, const Tensor& input) {
                  return conv2d_backward_weight(grad, input, weight_sizes, p.stride, p.padding,
                                                p.dilation, p.groups);
                }));
}

// ---- batching rules (Note [Batching rules])
// A batched operand's batch goes where the kernels already loop: with one weight
// for every sample, into the images (one convolution over B * N images). Otherwise
// it joins a channel dim: for one batched operand, each group's channels, which
// makes the product one GEMM with B times the rows (an ensemble's outputs, a
// Jacobian's weight gradients); for two (per-sample weights or weight gradients,
// DP-SGD's hot spot), the samples become groups, sample b's channels after sample
// b-1's, with groups = B * g. The kernels run one GEMM per image and group, so one
// call does the work of B convolutions (the weight gradient runs its groups in
// parallel).

using batching::BatchedArg;
using batching::VmapLevel;

void check_sample_rank(const BatchedArg& arg, const char* op, const char* name) {
  STRATA_CHECK(arg.logical_dim() == 4, op, "expected a 4-D ", name, ", got one of rank ",
               arg.logical_dim(), " (inside vmap)");
}

void check_groups(int64_t groups, const char* op) {
  STRATA_CHECK(groups > 0, op, "groups must be positive, got ", groups);
}

// A batch-first value [B, ..., C, ...] with its batch joined to dim `dim` of a
// sample, whose C entries form `groups` groups: [..., (groups, B, C / groups), ...],
// every group holding all samples' channels of that group. An unbatched operand
// (expanded) is copied per sample.
Tensor batch_into_channels(const Tensor& value, int64_t dim, int64_t groups, const char* op) {
  const int64_t channels = value.size(dim + 1);
  STRATA_CHECK(channels % groups == 0, op, "dim ", dim, " of a sample has ", channels,
               " channels, which are not divisible by groups = ", groups, " (inside vmap)");
  return value.unflatten(dim + 1, {groups, channels / groups})
      .movedim(0, dim + 1)
      .flatten(dim, dim + 2);
}

// The inverse for a result: [..., (groups, B, C / groups), ...] -> [..., B, C, ...],
// the batch at `dim` (a view when groups == 1).
Tensor batch_out_of_channels(const Tensor& value, int64_t dim, int64_t groups, int64_t batch) {
  const int64_t per_group = value.size(dim) / (groups * batch);
  return value.unflatten(dim, {groups, batch, per_group})
      .movedim(dim + 1, dim)
      .flatten(dim + 1, dim + 2);
}

// [B, N, C, H, W] -> [B * N, C, H, W].
Tensor images_folded(const BatchedArg& x) { return batching::batch_first(x).flatten(0, 1); }

// 4 sizes (of an input or weight) with dim `dim` multiplied by the batch size.
DimVector scaled_sizes(IntArrayRef sizes, size_t dim, int64_t batch, const char* op) {
  STRATA_CHECK(sizes.size() == 4, op, "expected 4 sizes, got ", shape_string(sizes));
  DimVector result(sizes);
  result[dim] *= batch;
  return result;
}

Tensor conv2d_batched(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                      int64_t groups) {
  constexpr const char* op = "strata::conv2d";
  const VmapLevel at = batching::current_vmap_level(op);
  const batching::BelowThisLevel below;
  const BatchedArg x = batching::unwrap(input, at.level), w = batching::unwrap(weight, at.level);
  const std::optional<BatchedArg> b =
      bias ? std::optional(batching::unwrap(*bias, at.level)) : std::nullopt;
  const bool bias_batched = b && b->batched();
  if (!x.batched() && !w.batched() && !bias_batched) {
    return conv2d(x.value, w.value, b ? std::optional(b->value) : std::nullopt, stride, padding,
                  dilation, groups);
  }
  check_sample_rank(x, op, "input");
  check_sample_rank(w, op, "weight");
  check_groups(groups, op);
  const int64_t batch = at.batch_size;
  if (w.batched()) {
    // Samples as groups, or the batch in each group's output channels.
    const int64_t folded_groups = x.batched() ? 1 : groups;
    const Tensor images =
        x.batched() ? batch_into_channels(batching::batch_first(x), 1, 1, op) : x.value;
    std::optional<Tensor> folded_bias;
    if (b) {
      folded_bias =
          batch_into_channels(batching::batch_first_expanded(*b, batch), 0, folded_groups, op);
    }
    const Tensor out =
        conv2d(images, batch_into_channels(batching::batch_first(w), 0, folded_groups, op),
               folded_bias, stride, padding, dilation, x.batched() ? groups * batch : groups);
    return batching::make_batched(batch_out_of_channels(out, 1, folded_groups, batch), 1, at.level);
  }
  // A bias per sample is added after one convolution with the shared weight.
  const std::optional<Tensor> shared_bias =
      b && !bias_batched ? std::optional(b->value) : std::nullopt;
  Tensor out =
      x.batched()
          ? conv2d(images_folded(x), w.value, shared_bias, stride, padding, dilation, groups)
                .unflatten(0, {batch, input.size(0)})
          : conv2d(x.value, w.value, shared_bias, stride, padding, dilation, groups);
  if (bias_batched) out = out + batching::batch_first(*b).view({batch, 1, weight.size(0), 1, 1});
  return batching::make_batched(out, 0, at.level);
}

Tensor conv2d_backward_input_batched(const Tensor& grad_output, IntArrayRef input_sizes,
                                     const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                                     IntArrayRef dilation, int64_t groups) {
  constexpr const char* op = "strata::conv2d_backward_input";
  const VmapLevel at = batching::current_vmap_level(op);
  const batching::BelowThisLevel below;
  const BatchedArg g = batching::unwrap(grad_output, at.level);
  const BatchedArg w = batching::unwrap(weight, at.level);
  if (!g.batched() && !w.batched()) {
    return conv2d_backward_input(g.value, input_sizes, w.value, stride, padding, dilation, groups);
  }
  check_sample_rank(g, op, "grad_output");
  check_sample_rank(w, op, "weight");
  check_groups(groups, op);
  const int64_t batch = at.batch_size;
  if (!w.batched()) {
    const Tensor grad_input =
        conv2d_backward_input(images_folded(g), scaled_sizes(input_sizes, 0, batch, op), w.value,
                              stride, padding, dilation, groups);
    return batching::make_batched(grad_input.unflatten(0, {batch, input_sizes[0]}), 0, at.level);
  }
  // Samples as groups, or the batch in each group's input channels.
  const Tensor grads =
      g.batched() ? batch_into_channels(batching::batch_first(g), 1, 1, op) : g.value;
  // Without batched grads, the batch joins the weight's input channels, those of one
  // group: in front of them.
  const Tensor weights = batch_into_channels(batching::batch_first(w), g.batched() ? 0 : 1, 1, op);
  const Tensor grad_input =
      conv2d_backward_input(grads, scaled_sizes(input_sizes, 1, batch, op), weights, stride,
                            padding, dilation, g.batched() ? groups * batch : groups);
  return batching::make_batched(
      batch_out_of_channels(grad_input, 1, g.batched() ? 1 : groups, batch), 1, at.level);
}

// Every sample has its own weight gradient: folding the batch into the images would
// sum over it.
Tensor conv2d_backward_weight_batched(const Tensor& grad_output, const Tensor& input,
                                      IntArrayRef weight_sizes, IntArrayRef stride,
                                      IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  constexpr const char* op = "strata::conv2d_backward_weight";
  const VmapLevel at = batching::current_vmap_level(op);
  const batching::BelowThisLevel below;
  const BatchedArg g = batching::unwrap(grad_output, at.level);
  const BatchedArg x = batching::unwrap(input, at.level);
  if (!g.batched() && !x.batched()) {
    return conv2d_backward_weight(g.value, x.value, weight_sizes, stride, padding, dilation,
                                  groups);
  }
  check_sample_rank(g, op, "grad_output");
  check_sample_rank(x, op, "input");
  check_groups(groups, op);
  const int64_t batch = at.batch_size;
  const bool both = g.batched() && x.batched();
  // Samples as groups, or the batch in each group's output (input) channels.
  const int64_t folded_groups = both ? 1 : groups;
  const Tensor grads =
      g.batched() ? batch_into_channels(batching::batch_first(g), 1, folded_groups, op) : g.value;
  const Tensor images =
      x.batched() ? batch_into_channels(batching::batch_first(x), 1, folded_groups, op) : x.value;
  // The result's output channels hold the batch when the grads' do, else its input
  // channels (of one group: the batch in front).
  const int64_t batch_dim = g.batched() ? 0 : 1;
  const Tensor grad_weight = conv2d_backward_weight(
      grads, images, scaled_sizes(weight_sizes, static_cast<size_t>(batch_dim), batch, op), stride,
      padding, dilation, both ? groups * batch : groups);
  return batching::make_batched(
      batch_out_of_channels(grad_weight, batch_dim, g.batched() ? folded_groups : 1, batch),
      batch_dim, at.level);
}

// ---- the rows (Note [One op, one place]) ----
// The shape functions run each op's own checks. A convolution, and either of its
// adjoints, does one multiply-add (2 FLOPs) per pair of an element of the
// convolution's output and an element of the weight's filter for that output
// channel, [C / groups, kH, kW]; the bias adds 1 per output element.

MetaList conv2d_shape(OpArgs args) {
  const Tensor& input = shape::tensor_arg(args, 0);
  const ConvParams p = conv_params(autograd::FormulaArguments(args.data()));
  const cpu::Conv2dGeometry g =
      conv2d_checked(input, shape::tensor_arg(args, 1), nn_detail::optional_tensor_arg(args, 2),
                     p.stride, p.padding, p.dilation, p.groups);
  return shape::single(output_sizes(g), input.dtype());
}

MetaList conv2d_backward_input_shape(OpArgs args) {
  const Tensor& weight = shape::tensor_arg(args, 2);
  const IntArrayRef input_sizes = args[1].to_int_list();
  const ConvParams p = conv_params(autograd::FormulaArguments(args.data()));
  backward_input_checked(shape::tensor_arg(args, 0), input_sizes, weight, p.stride, p.padding,
                         p.dilation, p.groups);
  return shape::single(input_sizes, weight.dtype());
}

MetaList conv2d_backward_weight_shape(OpArgs args) {
  const Tensor& input = shape::tensor_arg(args, 1);
  const IntArrayRef weight_sizes = args[2].to_int_list();
  const ConvParams p = conv_params(autograd::FormulaArguments(args.data()));
  backward_weight_checked(shape::tensor_arg(args, 0), input, weight_sizes, p.stride, p.padding,
                          p.dilation, p.groups);
  return shape::single(weight_sizes, input.dtype());
}

int64_t products(IntArrayRef output_sizes, IntArrayRef weight_sizes) {
  return 2 * numel(output_sizes) * numel(IntArrayRef(weight_sizes.data() + 1, 3));
}

int64_t conv2d_flops(OpArgs args, const MetaList& outputs) {
  const int64_t bias = args[2].is_none() ? 0 : numel(outputs.at(0).sizes);
  return products(outputs.at(0).sizes, shape::tensor_arg(args, 1).sizes()) + bias;
}

int64_t conv2d_backward_input_flops(OpArgs args, const MetaList&) {
  return products(shape::tensor_arg(args, 0).sizes(), shape::tensor_arg(args, 2).sizes());
}

int64_t conv2d_backward_weight_flops(OpArgs args, const MetaList& outputs) {
  return products(shape::tensor_arg(args, 0).sizes(), outputs.at(0).sizes);
}

const OpFamily kConvOps("nn_conv", {
    {.schema = "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
               "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
     .cpu = &conv2d_cpu,
     .cuda = &conv2d_cpu,
     .derivative = derivative(
         {.backward = &conv2d_backward, .forward = &conv2d_forward, .saved_inputs = args(0, 1)}),
     .batching = &conv2d_batched,
     .shape = &conv2d_shape,
     .flops = &conv2d_flops},
    {.schema = "conv2d_backward_input(Tensor grad_output, int[4] input_sizes, Tensor weight, "
               "int[2] stride, int[2] padding, int[2] dilation, int groups) -> Tensor",
     .cpu = &conv2d_backward_input_cpu,
     .cuda = &conv2d_backward_input_cpu,
     .derivative = derivative({.backward = &conv2d_backward_input_backward,
                               .forward = &conv2d_backward_input_forward,
                               .saved_inputs = args(0, 2)}),
     .batching = &conv2d_backward_input_batched,
     .shape = &conv2d_backward_input_shape,
     .flops = &conv2d_backward_input_flops},
    {.schema = "conv2d_backward_weight(Tensor grad_output, Tensor input, int[4] weight_sizes, "
               "int[2] stride, int[2] padding, int[2] dilation, int groups) -> Tensor",
     .cpu = &conv2d_backward_weight_cpu,
     .cuda = &conv2d_backward_weight_cpu,
     .derivative = derivative({.backward = &conv2d_backward_weight_backward,
                               .forward = &conv2d_backward_weight_forward,
                               .saved_inputs = args(0, 1)}),
     .batching = &conv2d_backward_weight_batched,
     .shape = &conv2d_backward_weight_shape,
     .flops = &conv2d_backward_weight_flops},
});

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return STRATA_OP("strata::conv2d", "", Conv2dSig)
      .call(input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              int64_t stride, int64_t padding) {
  return conv2d(input, weight, bias, IntArrayRef(stride), IntArrayRef(padding));
}

Tensor conv2d_backward_input(const Tensor& grad_output, IntArrayRef input_sizes,
                             const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                             IntArrayRef dilation, int64_t groups) {
  return STRATA_OP("strata::conv2d_backward_input", "", BackwardInputSig)
      .call(grad_output, input_sizes, weight, stride, padding, dilation, groups);
}

Tensor conv2d_backward_weight(const Tensor& grad_output, const Tensor& input,
                              IntArrayRef weight_sizes, IntArrayRef stride, IntArrayRef padding,
                              IntArrayRef dilation, int64_t groups) {
  return STRATA_OP("strata::conv2d_backward_weight", "", BackwardWeightSig)
      .call(grad_output, input, weight_sizes, stride, padding, dilation, groups);
}

}  // namespace strata::nn
