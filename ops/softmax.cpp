// softmax and log_softmax over one dim, and their backward ops (kernels in
// kernels/cpu/softmax.cpp).
#include "kernels/cpu/softmax.h"

#include <array>

#include "dispatcher/op_def.h"
#include "kernels/cuda/softmax.h"
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

namespace strata {
namespace {

using nn_detail::check_floating;
using nn_detail::check_same_dtype;
using nn_detail::contiguous;

using SoftmaxSig = Tensor(const Tensor&, int64_t);
using SoftmaxBackwardSig = Tensor(const Tensor&, const Tensor&, int64_t);

// The [outer, dim_size, inner] view of t around `dim`; a 0-dim tensor is one element.
cpu::SoftmaxShape lane_layout(const Tensor& t, int64_t dim, const char* op) {
  const int64_t d = wrap_dim(dim, t.dim(), op);
  cpu::SoftmaxShape s{1, 1, 1};
  for (int64_t i = 0; i < t.dim(); ++i) {
    const int64_t size = t.sizes()[i];
    if (i < d) s.outer *= size;
    if (i == d) s.dim_size = size;
    if (i > d) s.inner *= size;
  }
  return s;
}

// Each op's checks, shared by its kernel and its shape function.
template <bool kLog>
cpu::SoftmaxShape softmax_checked(const Tensor& input, int64_t dim) {
  constexpr const char* op = kLog ? "strata::log_softmax" : "strata::softmax";
  check_floating(input, op, "input");
  return lane_layout(input, dim, op);
}

template <bool kLog>
cpu::SoftmaxShape softmax_backward_checked(const Tensor& grad_output, const Tensor& output,
                                           int64_t dim) {
  constexpr const char* op = kLog ? "strata::log_softmax_backward" : "strata::softmax_backward";
  check_floating(output, op, "output");
  check_same_dtype(grad_output, output.dtype(), op, "grad_output");
  STRATA_CHECK(grad_output.sizes() == output.sizes(), op, "grad_output has shape ",
               shape_string(grad_output.sizes()), " but output has shape ",
               shape_string(output.sizes()));
  return lane_layout(output, dim, op);
}

template <bool kLog>
Tensor softmax_cpu(const Tensor& input, int64_t dim) {
  const cpu::SoftmaxShape s = softmax_checked<kLog>(input, dim);
  Tensor out = make_empty_tensor(input.sizes(), input.dtype(), input.device(),
                                 kLog ? "strata::log_softmax" : "strata::softmax");
  out.device().is_cuda() ? gpu::softmax_kernel(out, contiguous(input), s, kLog)
                         : cpu::softmax_kernel(out, contiguous(input), s, kLog);
  return out;
}

// softmax and log_softmax in ordinary ops (their decomposition facet), the
// maximum subtracted first as the kernel does.
template <bool kLog>
Tensor softmax_composite(const Tensor& input, int64_t dim) {
  softmax_checked<kLog>(input, dim);
  const Tensor shifted = input - input.amax({dim}, true);
  if constexpr (kLog) {
    return shifted - shifted.exp().sum({dim}, true).log();
  } else {
    const Tensor e = shifted.exp();
    return e / e.sum({dim}, true);
  }
}

template <bool kLog>
Tensor softmax_backward_cpu(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  const cpu::SoftmaxShape s = softmax_backward_checked<kLog>(grad_output, output, dim);
  Tensor grad_input =
      make_empty_tensor(output.sizes(), output.dtype(), output.device(),
                        kLog ? "strata::log_softmax_backward" : "strata::softmax_backward");
  if (on_device::any_cuda(grad_input, grad_output, output)) {
    gpu::softmax_backward_kernel(grad_input, contiguous(grad_output), contiguous(output), s, kLog);
  } else {
    cpu::softmax_backward_kernel(grad_input, contiguous(grad_output), contiguous(output), s, kLog);
  }
  return grad_input;
}

// ---- derivatives (Note [Derivative formulas]) -----------------------------------
// The backward ops get formulas of their own, with their `output` argument taken
// as an independent input, so that softmax is differentiable any number of times.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;
using autograd::sum_defined;

Tensor sum_over(const Tensor& t, int64_t dim) { return t.sum({dim}, true); }

// y = softmax(x) has the symmetric Jacobian diag(y) - y y^T: softmax_backward
// applies it to a gradient and to a tangent alike.
void softmax_grad(BackwardContext& c) {
  c.set_grad(0, nn::softmax_backward(c.grad(), c.output(), c.int_arg(1)));
}

void softmax_forward(ForwardContext& c) {
  c.set_tangent(0, nn::softmax_backward(c.tangent(0), c.output(), c.int_arg(1)));
}

// y = log_softmax(x) has the Jacobian I - 1 exp(y)^T: log_softmax_backward
// applies its transpose; the tangent is t less the sum of exp(y) * t.
void log_softmax_grad(BackwardContext& c) {
  c.set_grad(0, nn::log_softmax_backward(c.grad(), c.output(), c.int_arg(1)));
}

void log_softmax_forward(ForwardContext& c) {
  const Tensor& t = c.tangent(0);
  c.set_tangent(0, t - sum_over(t * c.output().exp(), c.int_arg(1)));
}

// f = y * (g - sum(g * y)), linear in g with a symmetric Jacobian diag(y) - y y^T,
// so its transpose is softmax_backward itself.
void softmax_backward_grad(BackwardContext& c) {
  const Tensor& u = c.grad();
  const Tensor& g = c.input(0);
  const Tensor& y = c.input(1);
  const int64_t dim = c.int_arg(2);
  if (c.needs_grad(0)) c.set_grad(0, nn::softmax_backward(u, y, dim));
  if (c.needs_grad(1)) c.set_grad(1, u * (g - sum_over(g * y, dim)) - g * sum_over(u * y, dim));
}

// df = softmax_backward(dg, y) + dy * (g - sum(g * y)) - y * sum(g * dy).
void softmax_backward_forward(ForwardContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& y = c.input(1);
  const int64_t dim = c.int_arg(2);
  Tensor of_grad = c.has_tangent(0) ? nn::softmax_backward(c.tangent(0), y, dim) : Tensor();
  Tensor of_output;
  if (c.has_tangent(1)) {
    const Tensor& dy = c.tangent(1);
    of_output = dy * (g - sum_over(g * y, dim)) - y * sum_over(g * dy, dim);
  }
  c.set_tangent(0, sum_defined(std::move(of_grad), of_output));
}

// f = g - exp(y) * sum(g).
void log_softmax_backward_grad(BackwardContext& c) {
  const Tensor& u = c.grad();
  const Tensor& g = c.input(0);
  Tensor probs = c.input(1).exp();
  const int64_t dim = c.int_arg(2);
  if (c.needs_grad(0)) c.set_grad(0, u - sum_over(u * probs, dim));
  if (c.needs_grad(1)) c.set_grad(1, -u * probs * sum_over(g, dim));
}

// df = log_softmax_backward(dg, y) - exp(y) * dy * sum(g).
void log_softmax_backward_forward(ForwardContext& c) {
  const Tensor& y = c.input(1);
  const int64_t dim = c.int_arg(2);
  Tensor of_grad = c.has_tangent(0) ? nn::log_softmax_backward(c.tangent(0), y, dim) : Tensor();
  Tensor of_output =
      c.has_tangent(1) ? -(y.exp() * c.tangent(1) * sum_over(c.input(0), dim)) : Tensor();
  c.set_tangent(0, sum_defined(std::move(of_grad), of_output));
}

// ---- batching rules (Note [Batching rules]) --------------------------------------
// Every op here maps tensors of one shape to a tensor of that shape, lane by lane
// along `dim`: for a batch, along the same dim of the samples, wherever the batch
// dim is. The kernels want contiguous inputs, so the batch dim stays where the
// inputs have it (moved first only when they disagree).

// Calls op(values, dim) with the batches of `tensors` (op kName) for values.
template <const char* kName, size_t N, class Op>
Tensor along_lanes(const std::array<const Tensor*, N>& tensors, int64_t dim, const Op& op) {
  const batching::VmapLevel at = batching::current_vmap_level(kName);
  std::array<batching::BatchedArg, N> args;
  std::optional<int64_t> shared_bdim;
  bool aligned = true;
  int64_t rank = 0;
  for (size_t i = 0; i < N; ++i) {
    args[i] = batching::unwrap(*tensors[i], at.level);
    aligned &= args[i].batched() && (!shared_bdim || shared_bdim == args[i].bdim);
    if (args[i].batched()) {
      shared_bdim = args[i].bdim;
      rank = args[i].logical_dim();
    }
  }
  const batching::BelowThisLevel below;
  std::array<Tensor, N> values;
  if (!shared_bdim) {
    for (size_t i = 0; i < N; ++i) values[i] = *tensors[i];
    return op(values, dim);
  }
  const int64_t bdim = aligned ? *shared_bdim : 0;
  for (size_t i = 0; i < N; ++i) {
    values[i] = aligned ? args[i].value : batching::batch_first_expanded(args[i], at.batch_size);
    // A 0-dim sample is one lane of one element: a size-1 dim after the batch.
    if (rank == 0) values[i] = values[i].unsqueeze(1);
  }
  const int64_t in_sample = batching::batch_first_dim(dim, rank, kName) - 1;
  const int64_t lane_dim = rank == 0 ? 1 : in_sample < bdim ? in_sample : in_sample + 1;
  Tensor out = op(values, lane_dim);
  return batching::make_batched(rank == 0 ? out.squeeze(1) : out, bdim, at.level);
}

template <Tensor (*kOp)(const Tensor&, int64_t), const char* kName>
Tensor lanes_rule(const Tensor& self, int64_t dim) {
  return along_lanes<kName, 1>(
      {&self}, dim, [](const std::array<Tensor, 1>& v, int64_t d) { return kOp(v[0], d); });
}

template <Tensor (*kOp)(const Tensor&, const Tensor&, int64_t), const char* kName>
Tensor lanes_rule(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return along_lanes<kName, 2>(
      {&grad_output, &output}, dim,
      [](const std::array<Tensor, 2>& v, int64_t d) { return kOp(v[0], v[1], d); });
}

constexpr char kSoftmax[] = "strata::softmax";
constexpr char kLogSoftmax[] = "strata::log_softmax";
constexpr char kSoftmaxBackward[] = "strata::softmax_backward";
constexpr char kLogSoftmaxBackward[] = "strata::log_softmax_backward";

// ---- the rows (Note [One op, one place]) ----------------------------------------
// Every op gives a tensor of its (first) argument's shape, after that op's checks.
// FLOPs per element: the forward ops 5 (the lane's max, the subtraction, exp, the
// lane's sum, and the scaling by 1 / sum or the subtraction of log sum), the
// backward ops 4 (softmax: g * y, its lane sum, the subtraction and the product
// with y; log_softmax: g's lane sum, exp y, the product and the subtraction).

template <bool kLog>
MetaList softmax_shape(OpArgs args) {
  softmax_checked<kLog>(shape::tensor_arg(args, 0), args[1].to_int());
  return shape::same_as_self(args);
}

template <bool kLog>
MetaList softmax_backward_shape(OpArgs args) {
  softmax_backward_checked<kLog>(shape::tensor_arg(args, 0), shape::tensor_arg(args, 1),
                                 args[2].to_int());
  return shape::same_as_self(args);
}

const OpFamily kSoftmaxOps("softmax", {
    {.schema = "softmax(Tensor self, int dim) -> Tensor",
     .cpu = &softmax_cpu<false>,
     .cuda = &softmax_cpu<false>,
     .decomposition = &softmax_composite<false>,
     .derivative = derivative(
         {.backward = &softmax_grad, .forward = &softmax_forward, .saved_outputs = args(0)}),
     .batching = &lanes_rule<&nn::softmax, kSoftmax>,
     .shape = &softmax_shape<false>,
     .flops = &flops::per_output_element<5>},
    {.schema = "log_softmax(Tensor self, int dim) -> Tensor",
     .cpu = &softmax_cpu<true>,
     .cuda = &softmax_cpu<true>,
     .decomposition = &softmax_composite<true>,
     .derivative = derivative({.backward = &log_softmax_grad,
                               .forward = &log_softmax_forward,
                               .saved_outputs = args(0)}),
     .batching = &lanes_rule<&nn::log_softmax, kLogSoftmax>,
     .shape = &softmax_shape<true>,
     .flops = &flops::per_output_element<5>},
    {.schema = "softmax_backward(Tensor grad_output, Tensor output, int dim) -> Tensor",
     .cpu = &softmax_backward_cpu<false>,
     .cuda = &softmax_backward_cpu<false>,
     .derivative = derivative({.backward = &softmax_backward_grad,
                               .forward = &softmax_backward_forward,
                               .saved_inputs = args(0, 1)}),
     .batching = &lanes_rule<&nn::softmax_backward, kSoftmaxBackward>,
     .shape = &softmax_backward_shape<false>,
     .flops = &flops::per_output_element<4>},
    {.schema = "log_softmax_backward(Tensor grad_output, Tensor output, int dim) -> Tensor",
     .cpu = &softmax_backward_cpu<true>,
     .cuda = &softmax_backward_cpu<true>,
     .derivative = derivative({.backward = &log_softmax_backward_grad,
                               .forward = &log_softmax_backward_forward,
                               .saved_inputs = args(0, 1)}),
     .batching = &lanes_rule<&nn::log_softmax_backward, kLogSoftmaxBackward>,
     .shape = &softmax_backward_shape<true>,
     .flops = &flops::per_output_element<4>},
});

}  // namespace

namespace nn {

Tensor softmax(const Tensor& input, int64_t dim) {
  return STRATA_OP("strata::softmax", "", SoftmaxSig).call(input, dim);
}

Tensor log_softmax(const Tensor& input, int64_t dim) {
  return STRATA_OP("strata::log_softmax", "", SoftmaxSig).call(input, dim);
}

Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return STRATA_OP("strata::softmax_backward", "", SoftmaxBackwardSig)
      .call(grad_output, output, dim);
}

Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return STRATA_OP("strata::log_softmax_backward", "", SoftmaxBackwardSig)
      .call(grad_output, output, dim);
}

}  // namespace nn

Tensor Tensor::softmax(int64_t dim) const { return nn::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return nn::log_softmax(*this, dim); }

}  // namespace strata
