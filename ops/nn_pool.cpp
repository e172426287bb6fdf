// 2-D pooling: max_pool2d_with_indices, max_pool2d, avg_pool2d and their backward ops
// (kernels in kernels/cpu/pool.cpp).
#include "dispatcher/op_def.h"
#include "kernels/cpu/pool.h"
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

using MaxPoolSig = Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef);
using MaxPoolWithIndicesSig = std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef,
                                                         IntArrayRef, IntArrayRef);
using MaxPoolBackwardSig = Tensor(const Tensor&, const Tensor&, const Tensor&);
using AvgPoolSig = Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef);
using AvgPoolBackwardSig = Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef,
                                  IntArrayRef);

// Checks the input and pooling parameters; an empty stride means the kernel size.
cpu::Pool2dGeometry pool_geometry(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                  IntArrayRef padding, IntArrayRef dilation, const char* op) {
  STRATA_CHECK(input.dim() == 3 || input.dim() == 4, op,
               "expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ",
               shape_string(input.sizes()));
  check_floating(input, op, "input");
  const IntArrayRef effective_stride = stride.empty() ? kernel_size : stride;
  const int64_t in_h = input.sizes()[input.dim() - 2], in_w = input.sizes()[input.dim() - 1];
  STRATA_CHECK(in_h > 0 && in_w > 0, op, "input of shape ", shape_string(input.sizes()),
               " has an empty spatial dim");
  cpu::Pool2dGeometry g;
  static_cast<cpu::Window2d&>(g) =
      sliding_window(input.sizes(), kernel_size, effective_stride, padding, dilation, op);
  // So that every window holds at least one pixel of the image.
  STRATA_CHECK(g.pad_h <= g.kernel_h / 2 && g.pad_w <= g.kernel_w / 2, op, "padding ",
               shape_string(padding), " must be between 0 and half the kernel size ", g.kernel_h,
               "x", g.kernel_w);
  g.planes = input.numel() / (in_h * in_w);
  return g;
}

// The input's shape with the spatial dims replaced by the output's.
DimVector pooled_sizes(const Tensor& input, const cpu::Pool2dGeometry& g) {
  DimVector sizes(input.sizes());
  sizes[sizes.size() - 2] = g.out_h;
  sizes[sizes.size() - 1] = g.out_w;
  return sizes;
}

void check_grad_output(const Tensor& grad_output, const Tensor& input, IntArrayRef expected,
                       const char* op) {
  check_same_dtype(grad_output, input.dtype(), op, "grad_output");
  STRATA_CHECK(grad_output.sizes() == expected, op, "grad_output has shape ",
               shape_string(grad_output.sizes()), " but the pooled output of an input of shape ",
               shape_string(input.sizes()), " has shape ", shape_string(expected));
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_cpu(const Tensor& input, IntArrayRef kernel_size,
                                                       IntArrayRef stride, IntArrayRef padding,
                                                       IntArrayRef dilation) {
  constexpr const char* op = "strata::max_pool2d_with_indices";
  const cpu::Pool2dGeometry g = pool_geometry(input, kernel_size, stride, padding, dilation, op);
  const DimVector sizes = pooled_sizes(input, g);
  Tensor values = make_empty_tensor(sizes, input.dtype(), input.device(), op);
  Tensor indices = make_empty_tensor(sizes, kInt64, input.device(), op);
  (on_device::any_cuda(values, input) ? gpu::max_pool2d_kernel : cpu::max_pool2d_kernel)(
      values, indices, contiguous(input), g);
  return {values, indices};
}

Tensor max_pool2d_composite(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                            IntArrayRef padding, IntArrayRef dilation) {
  return std::get<0>(max_pool2d_with_indices(input, kernel_size, stride, padding, dilation));
}

// max_pool2d_backward's checks, shared by its kernel and its shape function.
void check_max_pool2d_backward(const Tensor& grad_output, const Tensor& input,
                               const Tensor& indices) {
  constexpr const char* op = "strata::max_pool2d_backward";
  STRATA_CHECK(input.dim() == 3 || input.dim() == 4, op,
               "expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ",
               shape_string(input.sizes()));
  check_floating(input, op, "input");
  STRATA_CHECK(indices.dtype() == kInt64, op, "indices must be Int64, got ", indices.dtype());
  STRATA_CHECK(indices.dim() == input.dim(), op, "indices of shape ", shape_string(indices.sizes()),
               " do not match the input of shape ", shape_string(input.sizes()));
  for (int64_t d = 0; d + 2 < input.dim(); ++d) {
    STRATA_CHECK(indices.sizes()[d] == input.sizes()[d], op, "indices of shape ",
                 shape_string(indices.sizes()), " do not match the input of shape ",
                 shape_string(input.sizes()));
  }
  check_grad_output(grad_output, input, indices.sizes(), op);
}

Tensor max_pool2d_backward_cpu(const Tensor& grad_output, const Tensor& input,
                               const Tensor& indices) {
  check_max_pool2d_backward(grad_output, input, indices);
  cpu::Pool2dGeometry g{};
  g.in_h = input.sizes()[input.dim() - 2];
  g.in_w = input.sizes()[input.dim() - 1];
  g.out_h = indices.sizes()[indices.dim() - 2];
  g.out_w = indices.sizes()[indices.dim() - 1];
  g.planes = g.in_h * g.in_w == 0 ? 0 : input.numel() / (g.in_h * g.in_w);
  Tensor grad_input = make_empty_tensor(input.sizes(), input.dtype(), input.device(),
                                        "strata::max_pool2d_backward");
  (on_device::any_cuda(grad_input, grad_output, indices) ? gpu::max_pool2d_backward_kernel
                                                         : cpu::max_pool2d_backward_kernel)(
      grad_input, contiguous(grad_output), contiguous(indices), g);
  return grad_input;
}

Tensor avg_pool2d_cpu(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                      IntArrayRef padding) {
  constexpr const char* op = "strata::avg_pool2d";
  const cpu::Pool2dGeometry g = pool_geometry(input, kernel_size, stride, padding, {1}, op);
  Tensor out = make_empty_tensor(pooled_sizes(input, g), input.dtype(), input.device(), op);
  (on_device::any_cuda(out, input) ? gpu::avg_pool2d_kernel : cpu::avg_pool2d_kernel)(
      out, contiguous(input), g);
  return out;
}

// avg_pool2d_backward's checks, shared by its kernel and its shape function.
cpu::Pool2dGeometry avg_pool2d_backward_checked(const Tensor& grad_output, const Tensor& input,
                                                IntArrayRef kernel_size, IntArrayRef stride,
                                                IntArrayRef padding) {
  constexpr const char* op = "strata::avg_pool2d_backward";
  const cpu::Pool2dGeometry g = pool_geometry(input, kernel_size, stride, padding, {1}, op);
  check_grad_output(grad_output, input, pooled_sizes(input, g), op);
  return g;
}

Tensor avg_pool2d_backward_cpu(const Tensor& grad_output, const Tensor& input,
                               IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding) {
  const cpu::Pool2dGeometry g =
      avg_pool2d_backward_checked(grad_output, input, kernel_size, stride, padding);
  Tensor grad_input = make_empty_tensor(input.sizes(), input.dtype(), input.device(),
                                        "strata::avg_pool2d_backward");
  (on_device::any_cuda(grad_input, grad_output)
       ? gpu::avg_pool2d_backward_kernel
       : cpu::avg_pool2d_backward_kernel)(grad_input, contiguous(grad_output), g);
  return grad_input;
}

// ---- derivatives (Note [Derivative formulas]); max_pool2d differentiates through
// max_pool2d_with_indices. Both backward ops are linear in grad_output, and read
// their input only for its shape: their tangents are the op applied to
// grad_output's tangent. avg_pool2d is linear.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

// For each output position, the pixel of `t` (shaped like the input) that its index
// names: the max's selection, read from another tensor.
Tensor at_indices(const Tensor& t, const Tensor& indices) {
  const int64_t rank = indices.dim();
  return t.flatten(rank - 2).gather(rank - 2, indices.flatten(rank - 2)).view(indices.sizes());
}

void max_pool2d_with_indices_backward(BackwardContext& c) {
  c.set_grad(0, max_pool2d_backward(c.grad(0), c.input(0), c.output(1)));
}

void max_pool2d_with_indices_forward(ForwardContext& c) {
  c.set_tangent(0, at_indices(c.tangent(0), c.output(1)));
}

// max_pool2d_backward scatters each output gradient to the pixel its index names; the
// adjoint reads, for each output position, that pixel: the forward selection.
void max_pool2d_backward_backward(BackwardContext& c) {
  if (c.needs_grad(0)) c.set_grad(0, at_indices(c.grad(), c.input(2)));
}

void max_pool2d_backward_forward(ForwardContext& c) {
  if (c.has_tangent(0)) c.set_tangent(0, max_pool2d_backward(c.tangent(0), c.input(1), c.input(2)));
}

void avg_pool2d_backward_formula(BackwardContext& c) {
  c.set_grad(0, avg_pool2d_backward(c.grad(), c.input(0), c.int_list_arg(1), c.int_list_arg(2),
                                    c.int_list_arg(3)));
}

// avg_pool2d_backward is the adjoint of avg_pool2d, so its adjoint is avg_pool2d.
void avg_pool2d_backward_backward(BackwardContext& c) {
  if (!c.needs_grad(0)) return;
  c.set_grad(0, avg_pool2d(c.grad(), c.int_list_arg(2), c.int_list_arg(3), c.int_list_arg(4)));
}

void avg_pool2d_backward_forward(ForwardContext& c) {
  if (!c.has_tangent(0)) return;
  c.set_tangent(0, avg_pool2d_backward(c.tangent(0), c.input(1), c.int_list_arg(2),
                                       c.int_list_arg(3), c.int_list_arg(4)));
}

// ---- batching rules (Note [Batching rules])
// Pooling treats every [H, W] plane alike, so the batch folds into the planes: a
// rule hands the op its tensor arguments as [B, P, H, W] (P: one sample's planes),
// the rest unchanged, and gives each result one sample's layout back. An unbatched
// operand is expanded, not copied: the backward ops read their input only for its
// shape.

using batching::BatchedArg;

// `arg`'s samples as [B, P, H, W].
Tensor batched_planes(const BatchedArg& arg, int64_t batch, const char* op) {
  const int64_t rank = arg.logical_dim();
  STRATA_CHECK(rank == 3 || rank == 4, op,
               "expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got one of rank ", rank,
               " (inside vmap)");
  const Tensor value = batching::batch_first_expanded(arg, batch);
  const int64_t planes = rank == 4 ? value.size(1) * value.size(2) : value.size(1);
  return value.reshape({batch, planes, value.size(-2), value.size(-1)});
}

// [B, P, H', W'] planes as samples shaped like `sample` (a logical tensor) with the
// spatial size H' x W'.
Tensor as_samples(const Tensor& planes, const Tensor& sample, int64_t batch) {
  DimVector sizes{batch};
  for (int64_t d = 0; d + 2 < sample.dim(); ++d) sizes.push_back(sample.size(d));
  sizes.push_back(planes.size(-2));
  sizes.push_back(planes.size(-1));
  return planes.view(sizes);
}

// The rule of every op here: its tensor arguments come first, and its results are
// shaped like one sample of argument `like` (the input).
template <size_t kTensors, size_t kLike>
void pool_batched(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  const char* name = op.operator_name().name.c_str();
  const batching::VmapLevel at = batching::current_vmap_level(name);
  const size_t first = stack.size() - op.schema().arguments().size();
  bool any_batched = false;
  for (size_t i = first; i < first + kTensors; ++i) {
    any_batched |= batching::unwrap(stack[i].to_tensor(), at.level).batched();
  }
  if (!any_batched) return batching::call_below(op, stack);
  const batching::BelowThisLevel below;
  const Tensor like = stack[first + kLike].to_tensor();
  for (size_t i = first; i < first + kTensors; ++i) {
    stack[i] =
        batched_planes(batching::unwrap(stack[i].to_tensor(), at.level), at.batch_size, name);
  }
  batching::call_below(op, stack);
  for (size_t i = first; i < stack.size(); ++i) {
    stack[i] =
        batching::make_batched(as_samples(stack[i].to_tensor(), like, at.batch_size), 0, at.level);
  }
}

// ---- the rows (Note [One op, one place]) ----
// The shape functions run each op's own checks. Pooling counts 1 FLOP per window
// element of each output (a comparison or an add); max_pool2d_backward adds each
// output gradient once, to the pixel its index names.

// The pooled sizes of the input (argument 0) with kernel_size, stride and padding
// (arguments 1-3).
DimVector pooled_shape(OpArgs args, IntArrayRef dilation, const char* op) {
  const Tensor& input = shape::tensor_arg(args, 0);
  return pooled_sizes(input, pool_geometry(input, args[1].to_int_list(), args[2].to_int_list(),
                                           args[3].to_int_list(), dilation, op));
}

MetaList max_pool2d_with_indices_shape(OpArgs args) {
  const DimVector sizes =
      pooled_shape(args, args[4].to_int_list(), "strata::max_pool2d_with_indices");
  return {{sizes, shape::tensor_arg(args, 0).dtype()}, {sizes, kInt64}};
}

MetaList avg_pool2d_shape(OpArgs args) {
  return shape::single(pooled_shape(args, {1}, "strata::avg_pool2d"),
                       shape::tensor_arg(args, 0).dtype());
}

MetaList max_pool2d_backward_shape(OpArgs args) {
  const Tensor& input = shape::tensor_arg(args, 1);
  check_max_pool2d_backward(shape::tensor_arg(args, 0), input, shape::tensor_arg(args, 2));
  return shape::single(input.sizes(), input.dtype());
}

MetaList avg_pool2d_backward_shape(OpArgs args) {
  const Tensor& input = shape::tensor_arg(args, 1);
  avg_pool2d_backward_checked(shape::tensor_arg(args, 0), input, args[2].to_int_list(),
                              args[3].to_int_list(), args[4].to_int_list());
  return shape::single(input.sizes(), input.dtype());
}

// The elements of `pooled` times the window of a kernel_size argument (1 or 2
// values, checked by the shape function).
int64_t window_flops(IntArrayRef pooled, const IValue& kernel_size) {
  const std::vector<int64_t>& kernel = kernel_size.to_int_list();
  return numel(pooled) * kernel.front() * kernel.back();
}

int64_t pool2d_flops(OpArgs args, const MetaList& outputs) {
  return window_flops(outputs.at(0).sizes, args[1]);
}

int64_t avg_pool2d_backward_flops(OpArgs args, const MetaList&) {
  return window_flops(shape::tensor_arg(args, 0).sizes(), args[2]);
}

int64_t max_pool2d_backward_flops(OpArgs args, const MetaList&) {
  return shape::tensor_arg(args, 0).numel();
}

const OpFamily kPoolOps("nn_pool", {
    {.schema = "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
               "int[2] padding=0, int[2] dilation=1) -> (Tensor, Tensor)",
     .cpu = &max_pool2d_with_indices_cpu,
     .cuda = &max_pool2d_with_indices_cpu,
     .derivative = derivative({.backward = &max_pool2d_with_indices_backward,
                               .forward = &max_pool2d_with_indices_forward,
                               .saved_inputs = args(0),
                               .saved_outputs = args(1)}),
     .batching = KernelFunction::from_boxed(&pool_batched<1, 0>),
     .shape = &max_pool2d_with_indices_shape,
     .flops = &pool2d_flops},
    {.schema = "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
               "int[2] dilation=1) -> Tensor",
     .decomposition = &max_pool2d_composite},
    {.schema = "max_pool2d_backward(Tensor grad_output, Tensor self, Tensor indices) -> Tensor",
     .cpu = &max_pool2d_backward_cpu,
     .cuda = &max_pool2d_backward_cpu,
     .derivative = derivative({.backward = &max_pool2d_backward_backward,
                               .forward = &max_pool2d_backward_forward,
                               .saved_inputs = args(2)}),
     .batching = KernelFunction::from_boxed(&pool_batched<3, 1>),
     .shape = &max_pool2d_backward_shape,
     .flops = &max_pool2d_backward_flops},
    {.schema = "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0) "
               "-> Tensor",
     .cpu = &avg_pool2d_cpu,
     .cuda = &avg_pool2d_cpu,
     .derivative = derivative({.backward = &avg_pool2d_backward_formula,
                               .forward = &autograd::linear_forward,
                               .saved_inputs = args(0)}),
     .batching = KernelFunction::from_boxed(&pool_batched<1, 0>),
     .shape = &avg_pool2d_shape,
     .flops = &pool2d_flops},
    {.schema = "avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
               "int[2] stride, int[2] padding) -> Tensor",
     .cpu = &avg_pool2d_backward_cpu,
     .cuda = &avg_pool2d_backward_cpu,
     .derivative = derivative(
         {.backward = &avg_pool2d_backward_backward, .forward = &avg_pool2d_backward_forward}),
     .batching = KernelFunction::from_boxed(&pool_batched<2, 1>),
     .shape = &avg_pool2d_backward_shape,
     .flops = &avg_pool2d_backward_flops},
});

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation) {
  return STRATA_OP("strata::max_pool2d_with_indices", "", MaxPoolWithIndicesSig)
      .call(input, kernel_size, stride, padding, dilation);
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation) {
  return STRATA_OP("strata::max_pool2d", "", MaxPoolSig)
      .call(input, kernel_size, stride, padding, dilation);
}

Tensor max_pool2d(const Tensor& input, int64_t kernel_size) {
  return max_pool2d(input, IntArrayRef(kernel_size));
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& indices) {
  return STRATA_OP("strata::max_pool2d_backward", "", MaxPoolBackwardSig)
      .call(grad_output, input, indices);
}

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding) {
  return STRATA_OP("strata::avg_pool2d", "", AvgPoolSig).call(input, kernel_size, stride, padding);
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding) {
  return STRATA_OP("strata::avg_pool2d_backward", "", AvgPoolBackwardSig)
      .call(grad_output, input, kernel_size, stride, padding);
}

}  // namespace strata::nn
