// group_norm and its gradient group_norm_backward, each with a fused CPU kernel
// (kernels/cpu/group_norm.cpp): the forward normalises and applies the per-channel
// weight and bias in one pass per row; the backward gives the input's gradient and
// the per-sample sums behind the weight's and bias's in one pass, where the
// composite (layer_norm, then a multiply and an add; their gradients, two products
// and two sums) walks the activations several times. Off the CPU, and as trace's
// decomposition, each is its composite. group_norm_backward's own derivatives are
// written out, so group_norm stays differentiable any number of times.
#include <optional>
#include <tuple>

#include "dispatcher/op_def.h"
#include "kernels/cpu/group_norm.h"
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

using nn_detail::channel_shape;
using nn_detail::check_same_dtype;
using nn_detail::contiguous;
using OptionalTensor = std::optional<Tensor>;
using Grads = std::tuple<Tensor, Tensor, Tensor>;
using GroupNormSig = Tensor(const Tensor&, int64_t, const OptionalTensor&, const OptionalTensor&,
                            double);
using GroupNormBackwardSig = Grads(const Tensor&, const Tensor&, int64_t, const OptionalTensor&,
                                   double);

constexpr const char* kOp = "strata::group_norm";
constexpr const char* kBackwardOp = "strata::group_norm_backward";

// The checks both ops share; the geometry of an input [N, C, *].
cpu::GroupNormGeometry checked_geometry(const Tensor& input, int64_t num_groups,
                                        const OptionalTensor& weight, const OptionalTensor& bias,
                                        double eps, const char* op) {
  const int64_t channels = nn_detail::check_channels_input(input, op);
  STRATA_CHECK(num_groups > 0 && channels % num_groups == 0, op, "num_groups (", num_groups,
               ") must be positive and divide the number of channels (", channels,
               ") of the input of shape ", shape_string(input.sizes()));
  nn_detail::check_per_channel(weight, channels, "weight", input, op);
  nn_detail::check_per_channel(bias, channels, "bias", input, op);
  if (weight) check_same_dtype(*weight, input.dtype(), op, "weight");
  if (bias) check_same_dtype(*bias, input.dtype(), op, "bias");
  int64_t positions = 1;
  for (int64_t d = 2; d < input.dim(); ++d) positions *= input.size(d);
  return {input.size(0), channels, num_groups, positions, eps};
}

cpu::GroupNormGeometry backward_checked(const Tensor& grad_output, const Tensor& input,
                                        int64_t num_groups, const OptionalTensor& weight,
                                        double eps) {
  const cpu::GroupNormGeometry g =
      checked_geometry(input, num_groups, weight, std::nullopt, eps, kBackwardOp);
  check_same_dtype(grad_output, input.dtype(), kBackwardOp, "grad_output");
  STRATA_CHECK(grad_output.sizes() == input.sizes(), kBackwardOp, "grad_output has shape ",
               shape_string(grad_output.sizes()), " but the input has shape ",
               shape_string(input.sizes()));
  return g;
}

// [N, groups, C / groups * P]: the rows the normalisation runs over.
Tensor rows(const Tensor& t, const cpu::GroupNormGeometry& g) {
  return t.reshape({g.batch, g.groups, g.channels / g.groups * g.positions});
}

Tensor per_channel(const Tensor& t, int64_t rank) {
  return t.reshape(channel_shape(t.size(0), rank));
}

// A per-sample, per-channel [N, C] value broadcast against an input of `rank` dims.
Tensor per_sample_channel(const Tensor& t, int64_t rank) {
  DimVector shape(static_cast<size_t>(rank), 1);
  shape[0] = t.size(0);
  shape[1] = t.size(1);
  return t.reshape(shape);
}

// Sums over the positions of an [N, C, *] value: [N, C].
Tensor sum_positions(const Tensor& t) {
  if (t.dim() == 2) return t.clone();  // no positions; a new tensor, as the kernel gives
  DimVector dims;
  for (int64_t d = 2; d < t.dim(); ++d) dims.push_back(d);
  return t.sum(dims);
}

// The normalisation's Jacobian (symmetric, per row) applied to t.
Tensor normalisation_jacobian(const Tensor& t, const Tensor& input,
                              const cpu::GroupNormGeometry& g) {
  const Tensor row_values = rows(input, g);
  return layer_norm_backward(rows(t, g), row_values, {row_values.size(2)}, std::nullopt, g.eps)
      .reshape(input.sizes());
}

// x^, the input normalised per row.
Tensor normalised(const Tensor& input, const cpu::GroupNormGeometry& g) {
  const Tensor row_values = rows(input, g);
  return layer_norm(row_values, {row_values.size(2)}, std::nullopt, std::nullopt, g.eps)
      .reshape(input.sizes());
}

// Without samples or channels there is nothing to compute; without channels the
// group count is unbounded (any divides 0), so N * groups rows may not even be
// countable.
bool no_channels(const cpu::GroupNormGeometry& g) { return g.batch == 0 || g.channels == 0; }

Tensor group_norm_composite(const Tensor& input, int64_t num_groups, const OptionalTensor& weight,
                            const OptionalTensor& bias, double eps) {
  const cpu::GroupNormGeometry g = checked_geometry(input, num_groups, weight, bias, eps, kOp);
  if (no_channels(g)) return input.clone();
  return nn_detail::channel_affine(normalised(input, g), weight, bias,
                                   channel_shape(g.channels, input.dim()));
}

Tensor group_norm_cpu(const Tensor& input, int64_t num_groups, const OptionalTensor& weight,
                      const OptionalTensor& bias, double eps) {
  const cpu::GroupNormGeometry g = checked_geometry(input, num_groups, weight, bias, eps, kOp);
  Tensor out = make_empty_tensor(input.sizes(), input.dtype(), input.device(), kOp);
  if (input.numel() == 0) return out;
  const OptionalTensor w = contiguous(weight), b = contiguous(bias);
  cpu::group_norm_kernel(out, contiguous(input), w ? &*w : nullptr, b ? &*b : nullptr, g);
  return out;
}

Grads group_norm_backward_composite(const Tensor& grad_output, const Tensor& input,
                                    int64_t num_groups, const OptionalTensor& weight, double eps) {
  const cpu::GroupNormGeometry g = backward_checked(grad_output, input, num_groups, weight, eps);
  if (no_channels(g)) {
    return {input.clone(), zeros({g.batch, g.channels}, input.dtype(), input.device()),
            zeros({g.batch, g.channels}, input.dtype(), input.device())};
  }
  const Tensor h = weight ? grad_output * per_channel(*weight, input.dim()) : grad_output;
  return {normalisation_jacobian(h, input, g), sum_positions(grad_output * normalised(input, g)),
          sum_positions(grad_output)};
}

Grads group_norm_backward_cpu(const Tensor& grad_output, const Tensor& input, int64_t num_groups,
                              const OptionalTensor& weight, double eps) {
  const cpu::GroupNormGeometry g = backward_checked(grad_output, input, num_groups, weight, eps);
  Tensor grad_input = make_empty_tensor(input.sizes(), input.dtype(), input.device(), kBackwardOp);
  Tensor grad_weight =
      make_empty_tensor({g.batch, g.channels}, input.dtype(), input.device(), kBackwardOp);
  Tensor grad_bias =
      make_empty_tensor({g.batch, g.channels}, input.dtype(), input.device(), kBackwardOp);
  if (no_channels(g)) return {grad_input, grad_weight, grad_bias};
  const OptionalTensor w = contiguous(weight);
  cpu::group_norm_backward_kernel(grad_input, grad_weight, grad_bias, contiguous(grad_output),
                                  contiguous(input), w ? &*w : nullptr, g);
  return {grad_input, grad_weight, grad_bias};
}

// ---- derivatives (Note [Derivative formulas])
// group_norm is y = x^ * w + b per channel, x^ normalised per row with the
// symmetric Jacobian J(x). Its gradient is group_norm_backward: dx = J(g * w),
// and per sample and channel dw = sum(g * x^), db = sum(g) over positions. Those
// are linear in g and in w, so their derivatives in g and w are J, x^ and
// broadcasts again; in x, dx's is layer_norm_backward's own
// (layer_norm_backward_input_vjp / _jvp) and dw's is J applied to g times the
// cotangent (dx^ = J dx).

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;
using autograd::sum_defined;

template <class Context>
OptionalTensor optional_input(const Context& c, size_t arg) {
  return c.arg(arg).is_none() ? std::nullopt : std::optional(c.input(arg));
}

// Sums a gradient of an input's shape over everything but the channels: [C].
Tensor sum_to_channels(const Tensor& t) {
  DimVector dims{0};
  for (int64_t d = 2; d < t.dim(); ++d) dims.push_back(d);
  return t.sum(dims);
}

void group_norm_backward_formula(BackwardContext& c) {
  const Tensor& x = c.input(0);
  const auto [dx, dw, db] =
      group_norm_backward(c.grad(), x, c.int_arg(1), optional_input(c, 2), c.double_arg(4));
  if (c.needs_grad(0)) c.set_grad(0, dx);
  if (c.needs_grad(2)) c.set_grad(2, dw.sum({0}));
  if (c.needs_grad(3)) c.set_grad(3, db.sum({0}));
}

void group_norm_forward_formula(ForwardContext& c) {
  const Tensor& x = c.input(0);
  const OptionalTensor weight = optional_input(c, 2);
  const cpu::GroupNormGeometry g =
      checked_geometry(x, c.int_arg(1), weight, std::nullopt, c.double_arg(4), kOp);
  Tensor tangent;
  if (c.has_tangent(0)) {
    tangent = normalisation_jacobian(c.tangent(0), x, g);
    if (weight) tangent = tangent * per_channel(*weight, x.dim());
  }
  if (weight && c.has_tangent(2)) {
    tangent =
        sum_defined(std::move(tangent), normalised(x, g) * per_channel(c.tangent(2), x.dim()));
  }
  if (!c.arg(3).is_none() && c.has_tangent(3)) {
    tangent = sum_defined(std::move(tangent), per_channel(c.tangent(3), x.dim()));
  }
  c.set_tangent(0, std::move(tangent));
}

// group_norm_backward's arguments: grad_output 0, input 1, num_groups 2, weight 3,
// eps 4; outputs dx 0, dw 1, db 2.
struct BackwardArgs {
  Tensor g, x, h;  // h = g * w
  OptionalTensor weight;
  cpu::GroupNormGeometry geometry;
};

template <class Context>
BackwardArgs backward_args(const Context& c) {
  BackwardArgs a{c.input(0), c.input(1), {}, optional_input(c, 3), {}};
  a.geometry =
      checked_geometry(a.x, c.int_arg(2), a.weight, std::nullopt, c.double_arg(4), kBackwardOp);
  a.h = a.weight ? a.g * per_channel(*a.weight, a.x.dim()) : a.g;
  return a;
}

Tensor input_vjp(const Tensor& u, const BackwardArgs& a) {
  return layer_norm_backward_input_vjp(rows(u, a.geometry), rows(a.h, a.geometry),
                                       rows(a.x, a.geometry), 1, a.geometry.eps)
      .reshape(a.x.sizes());
}

void group_norm_backward_backward(BackwardContext& c) {
  const BackwardArgs a = backward_args(c);
  const int64_t rank = a.x.dim();
  const Tensor &u_dx = c.grad(0), &u_dw = c.grad(1), &u_db = c.grad(2);
  if (c.needs_grad(0) || c.needs_grad(3)) {
    const Tensor ju = normalisation_jacobian(u_dx, a.x, a.geometry);
    if (c.needs_grad(0)) {
      c.set_grad(0, (a.weight ? ju * per_channel(*a.weight, rank) : ju) +
                        normalised(a.x, a.geometry) * per_sample_channel(u_dw, rank) +
                        per_sample_channel(u_db, rank));
    }
    if (c.needs_grad(3)) c.set_grad(3, sum_to_channels(a.g * ju));
  }
  if (c.needs_grad(1)) {
    c.set_grad(1, input_vjp(u_dx, a) + normalisation_jacobian(a.g * per_sample_channel(u_dw, rank),
                                                              a.x, a.geometry));
  }
}

void group_norm_backward_forward(ForwardContext& c) {
  const BackwardArgs a = backward_args(c);
  const int64_t rank = a.x.dim();
  Tensor dh;
  if (c.has_tangent(0)) dh = a.weight ? c.tangent(0) * per_channel(*a.weight, rank) : c.tangent(0);
  if (a.weight && c.has_tangent(3)) {
    dh = sum_defined(std::move(dh), a.g * per_channel(c.tangent(3), rank));
  }
  Tensor d_dx, g_dxhat;  // g_dxhat: g times x^'s tangent
  if (dh.defined()) d_dx = normalisation_jacobian(dh, a.x, a.geometry);
  if (c.has_tangent(1)) {
    const Tensor& t = c.tangent(1);
    d_dx = sum_defined(std::move(d_dx),
                       layer_norm_backward_input_jvp(rows(t, a.geometry), rows(a.h, a.geometry),
                                                     rows(a.x, a.geometry), 1, a.geometry.eps)
                           .reshape(a.x.sizes()));
    g_dxhat = a.g * normalisation_jacobian(t, a.x, a.geometry);
  }
  Tensor d_dw, d_db;
  if (c.has_tangent(0)) {
    g_dxhat = sum_defined(std::move(g_dxhat), c.tangent(0) * normalised(a.x, a.geometry));
    d_db = sum_positions(c.tangent(0));
  }
  if (g_dxhat.defined()) d_dw = sum_positions(g_dxhat);
  c.set_tangent(0, std::move(d_dx));
  c.set_tangent(1, std::move(d_dw));
  c.set_tangent(2, std::move(d_db));
}

// ---- batching rules (Note [Batching rules]): the batch joins the samples N, whose
// rows the kernels run one by one. A per-sample weight or bias is applied with
// ordinary ops around the unweighted op.

using batching::BatchedArg;

// [B, N, C, *] -> [B * N, C, *], an unbatched value expanded to the batch.
Tensor fold(const BatchedArg& arg, int64_t batch, const char* op) {
  STRATA_CHECK(arg.logical_dim() >= 2, op,
               "expected an input [N, C, *] of rank at least 2, got one of rank ",
               arg.logical_dim(), " (inside vmap)");
  return batching::batch_first_expanded(arg, batch).flatten(0, 1);
}

// A per-channel [C] value at a level, as [B, 1, C, 1, ...] (batched) or [1, C, 1, ...]
// against batch-first values of a sample rank `rank`.
Tensor batch_per_channel(const BatchedArg& arg, int64_t rank) {
  if (!arg.batched()) return per_channel(arg.value, rank);
  const Tensor value = batching::batch_first(arg);
  DimVector shape(static_cast<size_t>(rank + 1), 1);
  shape[0] = value.size(0);
  shape[2] = value.size(1);
  return value.reshape(shape);
}

Tensor group_norm_batched(const Tensor& input, int64_t num_groups, const OptionalTensor& weight,
                          const OptionalTensor& bias, double eps) {
  const batching::VmapLevel at = batching::current_vmap_level(kOp);
  const batching::BelowThisLevel below;
  const BatchedArg x = batching::unwrap(input, at.level);
  const std::optional<BatchedArg> w =
      weight ? std::optional(batching::unwrap(*weight, at.level)) : std::nullopt;
  const std::optional<BatchedArg> b =
      bias ? std::optional(batching::unwrap(*bias, at.level)) : std::nullopt;
  const bool params_batched = (w && w->batched()) || (b && b->batched());
  if (!x.batched() && !params_batched) {
    return group_norm(x.value, num_groups, w ? std::optional(w->value) : std::nullopt,
                      b ? std::optional(b->value) : std::nullopt, eps);
  }
  const int64_t batch = at.batch_size;
  const Tensor folded = fold(x, batch, kOp);
  if (!params_batched) {
    const Tensor out = group_norm(folded, num_groups, w ? std::optional(w->value) : std::nullopt,
                                  b ? std::optional(b->value) : std::nullopt, eps);
    return batching::make_batched(out.unflatten(0, {batch, input.size(0)}), 0, at.level);
  }
  Tensor out = group_norm(folded, num_groups, std::nullopt, std::nullopt, eps)
                   .unflatten(0, {batch, input.size(0)});
  if (w) out = out * batch_per_channel(*w, x.logical_dim());
  if (b) out = out + batch_per_channel(*b, x.logical_dim());
  return batching::make_batched(out, 0, at.level);
}

Grads group_norm_backward_batched(const Tensor& grad_output, const Tensor& input,
                                  int64_t num_groups, const OptionalTensor& weight, double eps) {
  const batching::VmapLevel at = batching::current_vmap_level(kBackwardOp);
  const batching::BelowThisLevel below;
  const BatchedArg g = batching::unwrap(grad_output, at.level);
  const BatchedArg x = batching::unwrap(input, at.level);
  const std::optional<BatchedArg> w =
      weight ? std::optional(batching::unwrap(*weight, at.level)) : std::nullopt;
  const bool weight_batched = w && w->batched();
  if (!g.batched() && !x.batched() && !weight_batched) {
    return group_norm_backward(g.value, x.value, num_groups,
                               w ? std::optional(w->value) : std::nullopt, eps);
  }
  const int64_t batch = at.batch_size, samples = input.size(0);
  const Tensor grads = fold(g, batch, kBackwardOp), images = fold(x, batch, kBackwardOp);
  auto batched = [&](const Tensor& t) {
    return batching::make_batched(t.unflatten(0, {batch, samples}), 0, at.level);
  };
  if (!weight_batched) {
    const auto [dx, dw, db] = group_norm_backward(grads, images, num_groups,
                                                  w ? std::optional(w->value) : std::nullopt, eps);
    return {batched(dx), batched(dw), batched(db)};
  }
  // dw and db do not depend on the weight; dx is the unweighted op's on g * w.
  const auto [unused, dw, db] = group_norm_backward(grads, images, num_groups, std::nullopt, eps);
  const Tensor weighted =
      (batching::batch_first_expanded(g, batch) * batch_per_channel(*w, g.logical_dim()))
          .flatten(0, 1);
  const Tensor dx =
      std::get<0>(group_norm_backward(weighted, images, num_groups, std::nullopt, eps));
  return {batched(dx), batched(dw), batched(db)};
}

// ---- the rows (Note [One op, one place]) ----
// FLOPs per input element: group_norm 6 (the statistics 4: the mean's add, the
// centring, the square and its add; then one multiply-add); group_norm_backward 12
// (the statistics 4, the sums of g and g * (x - mean) 4, the result 4).

MetaList group_norm_shape(OpArgs args) {
  const Tensor& input = shape::tensor_arg(args, 0);
  checked_geometry(input, args[1].to_int(), nn_detail::optional_tensor_arg(args, 2),
                   nn_detail::optional_tensor_arg(args, 3), args[4].to_double(), kOp);
  return shape::single(input.sizes(), input.dtype());
}

MetaList group_norm_backward_shape(OpArgs args) {
  const Tensor& input = shape::tensor_arg(args, 1);
  const cpu::GroupNormGeometry g =
      backward_checked(shape::tensor_arg(args, 0), input, args[2].to_int(),
                       nn_detail::optional_tensor_arg(args, 3), args[4].to_double());
  const DimVector per_sample{g.batch, g.channels};
  return {{DimVector(input.sizes()), input.dtype()},
          {per_sample, input.dtype()},
          {per_sample, input.dtype()}};
}

int64_t group_norm_flops(OpArgs, const MetaList& outputs) {
  return 6 * nn_detail::numel(outputs.at(0).sizes);
}

int64_t group_norm_backward_flops(OpArgs, const MetaList& outputs) {
  return 12 * nn_detail::numel(outputs.at(0).sizes);
}

const OpFamily kGroupNormOps(
    "nn_group_norm",
    {
        {.schema = "group_norm(Tensor input, int num_groups, Tensor? weight=None, "
                   "Tensor? bias=None, float eps=1e-05) -> Tensor",
         .cpu = &group_norm_cpu,
         .cuda = &group_norm_composite,
         .decomposition = &group_norm_composite,
         .derivative = derivative({.backward = &group_norm_backward_formula,
                                   .forward = &group_norm_forward_formula,
                                   .saved_inputs = args(0, 2)}),
         .batching = &group_norm_batched,
         .shape = &group_norm_shape,
         .flops = &group_norm_flops},
        {.schema = "group_norm_backward(Tensor grad_output, Tensor input, int num_groups, "
                   "Tensor? weight=None, float eps=1e-05) -> (Tensor, Tensor, Tensor)",
         .cpu = &group_norm_backward_cpu,
         .cuda = &group_norm_backward_composite,
         .decomposition = &group_norm_backward_composite,
         .derivative = derivative({.backward = &group_norm_backward_backward,
                                   .forward = &group_norm_backward_forward,
                                   .saved_inputs = args(0, 1, 3)}),
         .batching = &group_norm_backward_batched,
         .shape = &group_norm_backward_shape,
         .flops = &group_norm_backward_flops},
    });

}  // namespace

Tensor group_norm(const Tensor& input, int64_t num_groups, const OptionalTensor& weight,
                  const OptionalTensor& bias, double eps) {
  return STRATA_OP(kOp, "", GroupNormSig).call(input, num_groups, weight, bias, eps);
}

Grads group_norm_backward(const Tensor& grad_output, const Tensor& input, int64_t num_groups,
                          const OptionalTensor& weight, double eps) {
  return STRATA_OP(kBackwardOp, "", GroupNormBackwardSig)
      .call(grad_output, input, num_groups, weight, eps);
}

}  // namespace strata::nn
