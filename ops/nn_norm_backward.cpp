// layer_norm_backward: the gradient of layer_norm (and so of group_norm, which
// normalises through it) in its input, as one op with a fused kernel
// (kernels/cpu/nn_misc.cpp). Its own derivatives in both modes are written out
// below, so layer_norm stays differentiable any number of times.
#include <optional>

#include "dispatcher/op_def.h"
#include "kernels/cpu/nn_misc.h"
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
using OptionalTensor = std::optional<Tensor>;
using LayerNormBackwardSig = Tensor(const Tensor&, const Tensor&, IntArrayRef,
                                    const OptionalTensor&, double);

constexpr const char* kOp = "strata::layer_norm_backward";

// The number of leading (not normalized) dims of the input, after checking the arguments.
int64_t check_arguments(const Tensor& grad_output, const Tensor& input,
                        IntArrayRef normalized_shape, const OptionalTensor& weight) {
  check_floating(input, kOp, "input");
  check_same_dtype(grad_output, input.dtype(), kOp, "grad_output");
  STRATA_CHECK(grad_output.sizes() == input.sizes(), kOp, "grad_output has shape ",
               shape_string(grad_output.sizes()), " but the input has shape ",
               shape_string(input.sizes()));
  const int64_t leading = input.dim() - static_cast<int64_t>(normalized_shape.size());
  bool matches = !normalized_shape.empty() && leading >= 0;
  for (size_t i = 0; matches && i < normalized_shape.size(); ++i) {
    matches = input.sizes()[leading + i] == normalized_shape[i];
  }
  STRATA_CHECK(matches, kOp, "normalized_shape ", shape_string(normalized_shape),
               " does not match the trailing dims of input of shape ", shape_string(input.sizes()));
  if (weight) {
    check_same_dtype(*weight, input.dtype(), kOp, "weight");
    STRATA_CHECK(weight->sizes() == normalized_shape, kOp, "weight has shape ",
                 shape_string(weight->sizes()), ", expected ", shape_string(normalized_shape));
  }
  return leading;
}

// x^ = (x - mean) * rstd over the normalized dims (the last `count` of x), rows
// independent.
struct Normalized {
  DimVector dims;
  Tensor centered;  // x - mean
  Tensor rstd;
  Tensor mean_of(const Tensor& t) const { return t.mean(dims, true); }
};

Normalized normalize(const Tensor& x, size_t count, double eps) {
  Normalized n;
  for (int64_t d = x.dim() - static_cast<int64_t>(count); d < x.dim(); ++d) n.dims.push_back(d);
  n.centered = x - x.mean(n.dims, true);
  n.rstd = (n.mean_of(n.centered.square()) + eps).rsqrt();
  return n;
}

// In ordinary ops (the decomposition, and the kernel off the CPU): the Jacobian of
// x -> x^ (symmetric) applied to h = g * weight: rstd * (h - mean(h)) - c * (rstd^3 *
// mean(h * c)) with c = x - mean.
Tensor layer_norm_backward_composite(const Tensor& grad_output, const Tensor& input,
                                     IntArrayRef normalized_shape, const OptionalTensor& weight,
                                     double eps) {
  check_arguments(grad_output, input, normalized_shape, weight);
  const Normalized n = normalize(input, normalized_shape.size(), eps);
  const Tensor h = weight ? grad_output * *weight : grad_output;
  const Tensor along = n.mean_of(h * n.centered) * n.rstd.pow(3);
  return (h - n.mean_of(h)) * n.rstd - n.centered * along;
}

Tensor layer_norm_backward_cpu(const Tensor& grad_output, const Tensor& input,
                               IntArrayRef normalized_shape, const OptionalTensor& weight,
                               double eps) {
  const int64_t leading = check_arguments(grad_output, input, normalized_shape, weight);
  // With no elements there are no rows (the leading sizes' product may overflow).
  int64_t rows = input.numel() == 0 ? 0 : 1;
  for (int64_t d = 0; d < leading && rows != 0; ++d) rows *= input.sizes()[d];
  Tensor grad_input = make_empty_tensor(input.sizes(), input.dtype(), input.device(), kOp);
  const OptionalTensor weight_data = nn_detail::contiguous(weight);
  cpu::layer_norm_backward_kernel(grad_input, nn_detail::contiguous(grad_output),
                                  nn_detail::contiguous(input),
                                  weight_data ? &*weight_data : nullptr, rows, eps);
  return grad_input;
}

// ---- derivatives (Note [Derivative formulas])
// f(g, x, w) = J(x) h with h = g * w, J the normalisation's (symmetric) Jacobian.
// f is linear in h, so its derivatives in g and w are J applied again (the op
// itself, without a weight). In x, with c = x - mean, r = rstd, a = mean(h),
// s = mean(h * c), f = r (h - a) - r^3 s c, and over a row of n values
//   dr = -r^3 mean(c t),  dc = t - mean(t),  ds = mean((h - a) t)
// for a tangent t, which gives the forward formula; its transpose, for a
// cotangent u with p = mean(u (h - a)), q = mean(u c), is
//   r^3 ((3 r^2 s q - p) c - q (h - a) - s (u - mean(u))).

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;
using autograd::sum_defined;

struct Statistics {
  Normalized n;
  Tensor h_centered;  // h - mean(h)
  Tensor s;           // mean(h * c)
  Tensor r3;          // rstd^3
};

Statistics statistics(const Tensor& h, const Tensor& input, size_t normalized_dims, double eps) {
  Statistics st{normalize(input, normalized_dims, eps), {}, {}, {}};
  st.h_centered = h - st.n.mean_of(h);
  st.s = st.n.mean_of(h * st.n.centered);
  st.r3 = st.n.rstd.pow(3);
  return st;
}

template <class Context>
OptionalTensor weight_of(const Context& c) {
  return c.arg(3).is_none() ? std::nullopt : std::optional(c.input(3));
}

template <class Context>
Tensor h_of(const Context& c) {
  const OptionalTensor weight = weight_of(c);
  return weight ? c.input(0) * *weight : c.input(0);
}

}  // namespace

Tensor layer_norm_backward_input_vjp(const Tensor& u, const Tensor& h, const Tensor& input,
                                     size_t normalized_dims, double eps) {
  const Statistics st = statistics(h, input, normalized_dims, eps);
  const Tensor p = st.n.mean_of(u * st.h_centered);
  const Tensor q = st.n.mean_of(u * st.n.centered);
  const Tensor along = st.n.rstd.square() * st.s * q * 3.0 - p;
  return st.r3 * (st.n.centered * along - st.h_centered * q - (u - st.n.mean_of(u)) * st.s);
}

Tensor layer_norm_backward_input_jvp(const Tensor& t, const Tensor& h, const Tensor& input,
                                     size_t normalized_dims, double eps) {
  const Statistics st = statistics(h, input, normalized_dims, eps);
  const Tensor dr = -st.r3 * st.n.mean_of(st.n.centered * t);
  const Tensor ds = st.n.mean_of(st.h_centered * t);
  const Tensor dc = t - st.n.mean_of(t);
  const Tensor along = st.n.rstd.square() * dr * st.s * 3.0 + st.r3 * ds;
  return dr * st.h_centered - dc * (st.r3 * st.s) - st.n.centered * along;
}

namespace {

void layer_norm_backward_grad(BackwardContext& c) {
  const Tensor& u = c.grad();
  const OptionalTensor weight = weight_of(c);
  if (c.needs_grad(0) || c.needs_grad(3)) {
    const Tensor ju =
        layer_norm_backward(u, c.input(1), c.int_list_arg(2), std::nullopt, c.double_arg(4));
    if (c.needs_grad(0)) c.set_grad(0, weight ? ju * *weight : ju);
    if (c.needs_grad(3)) c.set_grad(3, c.input(0) * ju);  // leading dims summed by the caller
  }
  if (c.needs_grad(1)) {
    c.set_grad(1, layer_norm_backward_input_vjp(u, h_of(c), c.input(1), c.int_list_arg(2).size(),
                                                c.double_arg(4)));
  }
}

void layer_norm_backward_forward(ForwardContext& c) {
  const OptionalTensor weight = weight_of(c);
  Tensor dh;
  if (c.has_tangent(0)) dh = weight ? c.tangent(0) * *weight : c.tangent(0);
  if (weight && c.has_tangent(3)) dh = sum_defined(std::move(dh), c.input(0) * c.tangent(3));
  Tensor tangent;
  if (dh.defined()) {
    tangent = layer_norm_backward(dh, c.input(1), c.int_list_arg(2), std::nullopt, c.double_arg(4));
  }
  if (c.has_tangent(1)) {
    tangent = sum_defined(std::move(tangent),
                          layer_norm_backward_input_jvp(c.tangent(1), h_of(c), c.input(1),
                                                        c.int_list_arg(2).size(), c.double_arg(4)));
  }
  c.set_tangent(0, std::move(tangent));
}

// ---- batching rule (Note [Batching rules]): the batch joins the leading dims the
// kernel runs row by row; a per-sample weight is applied to the gradient first.
Tensor layer_norm_backward_batched(const Tensor& grad_output, const Tensor& input,
                                   IntArrayRef normalized_shape, const OptionalTensor& weight,
                                   double eps) {
  check_arguments(grad_output, input, normalized_shape, weight);
  const batching::VmapLevel at = batching::current_vmap_level(kOp);
  const batching::BelowThisLevel below;
  const batching::BatchedArg g = batching::unwrap(grad_output, at.level);
  const batching::BatchedArg x = batching::unwrap(input, at.level);
  const std::optional<batching::BatchedArg> w =
      weight ? std::optional(batching::unwrap(*weight, at.level)) : std::nullopt;
  const bool weight_batched = w && w->batched();
  if (!g.batched() && !x.batched() && !weight_batched) {
    return layer_norm_backward(g.value, x.value, normalized_shape,
                               w ? std::optional(w->value) : std::nullopt, eps);
  }
  Tensor grads = batching::batch_first_expanded(g, at.batch_size);
  if (weight_batched) grads = grads * batching::batch_first_padded(*w, x.logical_dim());
  const OptionalTensor shared = w && !weight_batched ? std::optional(w->value) : std::nullopt;
  const Tensor out = layer_norm_backward(grads, batching::batch_first_expanded(x, at.batch_size),
                                         normalized_shape, shared, eps);
  return batching::make_batched(out, 0, at.level);
}

// ---- the row (Note [One op, one place]) ----
// FLOPs per element: the statistics 4 (the mean's add, the centring, the square
// and its add), the two sums of h and h * c 3, the result 4; 1 more for a weight.

MetaList layer_norm_backward_shape(OpArgs args) {
  check_arguments(shape::tensor_arg(args, 0), shape::tensor_arg(args, 1), args[2].to_int_list(),
                  nn_detail::optional_tensor_arg(args, 3));
  return shape::single(shape::tensor_arg(args, 1).sizes(), shape::tensor_arg(args, 1).dtype());
}

int64_t layer_norm_backward_flops(OpArgs args, const MetaList& outputs) {
  return (args[3].is_none() ? 11 : 12) * nn_detail::numel(outputs.at(0).sizes);
}

const OpFamily kNormBackwardOps("nn_norm_backward", {
    {.schema = "layer_norm_backward(Tensor grad_output, Tensor input, int[] normalized_shape, "
               "Tensor? weight=None, float eps=1e-05) -> Tensor",
     .cpu = &layer_norm_backward_cpu,
     .cuda = &layer_norm_backward_composite,
     .decomposition = &layer_norm_backward_composite,
     .derivative = derivative({.backward = &layer_norm_backward_grad,
                               .forward = &layer_norm_backward_forward,
                               .saved_inputs = args(0, 1, 3)}),
     .batching = &layer_norm_backward_batched,
     .shape = &layer_norm_backward_shape,
     .flops = &layer_norm_backward_flops},
});

}  // namespace

Tensor layer_norm_backward(const Tensor& grad_output, const Tensor& input,
                           IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                           double eps) {
  return STRATA_OP(kOp, "", LayerNormBackwardSig)
      .call(grad_output, input, normalized_shape, weight, eps);
}

}  // namespace strata::nn
