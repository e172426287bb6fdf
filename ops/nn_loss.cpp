// Losses: nll_loss and mse_loss (kernels in kernels/cpu/loss.cpp), and cross_entropy
// as log_softmax followed by nll_loss.
#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/loss.h"
#include "kernels/cuda/nn.h"
#include "ops/device_choice.h"
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

using NllLossSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t,
                          int64_t);
using LossSig = Tensor(const Tensor&, const Tensor&, int64_t);

void check_reduction(int64_t reduction, const char* op) {
  STRATA_CHECK(reduction >= 0 && reduction <= 2, op, "reduction must be 0 (none), 1 (mean) or ",
               "2 (sum), got ", reduction);
}

// Each op's checks, shared by its kernel and its shape function; they give the
// output's sizes (and mse_loss's dtype).
DimVector nll_loss_checked(const Tensor& input, const Tensor& target,
                           const std::optional<Tensor>& weight, int64_t reduction) {
  constexpr const char* op = "strata::nll_loss";
  check_reduction(reduction, op);
  check_floating(input, op, "input");
  STRATA_CHECK(target.dtype() == kInt64, op, "target must hold Int64 class indices, got a ",
               target.dtype(), " tensor");
  STRATA_CHECK(input.dim() == 1 || input.dim() == 2, op,
               "expected input [N, C] or [C] of log-probabilities, got shape ",
               shape_string(input.sizes()));
  const bool batched = input.dim() == 2;
  STRATA_CHECK(
      batched ? target.dim() == 1 && target.sizes()[0] == input.sizes()[0] : target.dim() == 0, op,
      "target of shape ", shape_string(target.sizes()), " does not match input of shape ",
      shape_string(input.sizes()), " (expected ", batched ? shape_string({input.sizes()[0]}) : "[]",
      ")");
  const int64_t classes = input.sizes().back();
  if (weight) {
    check_same_dtype(*weight, input.dtype(), op, "weight");
    STRATA_CHECK(weight->dim() == 1 && weight->sizes()[0] == classes, op, "weight has shape ",
                 shape_string(weight->sizes()), ", expected [", classes, "]");
  }
  return reduction == 0 ? DimVector(target.sizes()) : DimVector();
}

TensorMeta mse_loss_checked(const Tensor& input, const Tensor& target, int64_t reduction) {
  constexpr const char* op = "strata::mse_loss";
  check_reduction(reduction, op);
  const ScalarType dtype = result_type(input, target);
  STRATA_CHECK(dtype == kFloat32 || dtype == kFloat64, op,
               "expected floating-point input and target, got ", input.dtype(), " and ",
               target.dtype());
  const DimVector sizes = broadcast_shapes(input.sizes(), target.sizes(), op);
  return {reduction == 0 ? sizes : DimVector(), dtype};
}

Tensor nll_loss_cpu(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                    int64_t reduction, int64_t ignore_index) {
  Tensor out = make_empty_tensor(nll_loss_checked(input, target, weight, reduction), input.dtype(),
                                 input.device(), "strata::nll_loss");
  const std::optional<Tensor> weight_data = contiguous(weight);
  (on_device::any_cuda(out, input, target, weight) ? gpu::nll_loss_kernel : cpu::nll_loss_kernel)(
      out, contiguous(input), contiguous(target), weight_data ? &*weight_data : nullptr, reduction,
      ignore_index);
  return out;
}

Tensor cross_entropy_composite(const Tensor& logits, const Tensor& target, int64_t reduction) {
  STRATA_CHECK(logits.dim() == 1 || logits.dim() == 2, "strata::cross_entropy",
               "expected logits [N, C] or [C], got shape ", shape_string(logits.sizes()));
  return nll_loss(log_softmax(logits, logits.dim() - 1), target, std::nullopt,
                  static_cast<Reduction>(reduction));
}

// t converted to dtype, or t itself when it already has it.
Tensor as_dtype(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor converted = make_empty_tensor(t.sizes(), dtype, t.device(), "strata::mse_loss");
  cpu::copy_kernel(converted, t);
  return converted;
}

Tensor mse_loss_cpu(const Tensor& input, const Tensor& target, int64_t reduction) {
  const TensorMeta meta = mse_loss_checked(input, target, reduction);
  Tensor out = make_empty_tensor(meta.sizes, meta.dtype, input.device(), "strata::mse_loss");
  cpu::mse_loss_kernel(out, as_dtype(input, meta.dtype), as_dtype(target, meta.dtype), reduction);
  return out;
}

// mse_loss in ordinary ops (its decomposition facet).
Tensor mse_loss_composite(const Tensor& input, const Tensor& target, int64_t reduction) {
  mse_loss_checked(input, target, reduction);
  const Tensor diff = input - target;
  const Tensor squared = diff * diff;
  switch (static_cast<Reduction>(reduction)) {
    case Reduction::None: return squared;
    case Reduction::Mean: return squared.mean();
    case Reduction::Sum: return squared.sum();
  }
  return squared;
}

// ---- derivatives (Note [Derivative formulas]); cross_entropy differentiates
// through its decomposition.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;
using autograd::sum_defined;

// picked[..., k]: whether the loss of a sample reads its class k (none for an
// ignored target).
Tensor picked_classes(const Tensor& input, const Tensor& target, int64_t ignore_index) {
  Tensor label = target.unsqueeze(-1);
  const Tensor classes = arange(input.sizes().back(), kInt64, input.device());
  return (classes == label).logical_and(label != ignore_index);
}

// loss_i = -w[t_i] x[i, t_i] (0 for an ignored target), kept (none), summed, or
// summed and divided by W = sum of w[t_i] (mean). Through W the mean also
// depends on the weights: d mean / d w_c = sum over i with t_i = c of
// (-x[i, c] - mean) / W.
void nll_loss_backward(BackwardContext& c) {
  const Tensor& input = c.input(0);
  const bool weighted = !c.arg(2).is_none();
  const auto reduction = static_cast<Reduction>(c.int_arg(3));
  Tensor picked = picked_classes(input, c.input(1), c.int_arg(4));
  Tensor picked_weight = weighted ? picked * c.input(2) : picked.to(input.dtype());
  // d loss / d loss_i, shaped to broadcast against the input.
  Tensor per_sample = c.grad();
  if (reduction == Reduction::None) per_sample = per_sample.unsqueeze(-1);
  if (reduction == Reduction::Mean) per_sample = per_sample / picked_weight.sum();
  if (c.needs_grad(0)) c.set_grad(0, -(per_sample * picked_weight));
  if (c.needs_grad(2)) {
    Tensor read = reduction == Reduction::Mean ? input + c.output() : input;
    c.set_grad(2, -(per_sample * picked * read));  // summed over the batch to [C]
  }
}

// The loss is linear in the input, and (W aside) in the weights: each tangent
// term is the loss of the tangent. For a mean, d mean = (dN - mean dW) / W with
// N the sum of the losses, which is the summed loss of input + mean under the
// weights' tangent, over W.
void nll_loss_forward(ForwardContext& c) {
  const Tensor& input = c.input(0);
  const Tensor& target = c.input(1);
  const std::optional<Tensor> weight =
      c.arg(2).is_none() ? std::nullopt : std::optional<Tensor>(c.input(2));
  const auto reduction = static_cast<Reduction>(c.int_arg(3));
  const int64_t ignore_index = c.int_arg(4);
  Tensor tangent =
      c.has_tangent(0) ? nll_loss(c.tangent(0), target, weight, reduction, ignore_index) : Tensor();
  if (c.has_tangent(2)) {
    Tensor of_weight;
    if (reduction == Reduction::Mean) {
      const Tensor total_weight = (picked_classes(input, target, ignore_index) * *weight).sum();
      of_weight = nll_loss(input + c.output(), target, c.tangent(2), Reduction::Sum, ignore_index) /
                  total_weight;
    } else {
      of_weight = nll_loss(input, target, c.tangent(2), reduction, ignore_index);
    }
    tangent = sum_defined(std::move(tangent), of_weight);
  }
  c.set_tangent(0, std::move(tangent));
}

// d loss_i / d input_i = 2 (input_i - target_i) (over the count for a mean), and
// the negation of it for the target.
template <class Context>
Tensor mse_derivative(const Context& c) {
  Tensor diff = c.input(0) - c.input(1);
  double scale = 2.0;
  if (static_cast<Reduction>(c.int_arg(2)) == Reduction::Mean) {
    scale /= static_cast<double>(diff.numel());
  }
  return diff * scale;
}

void mse_loss_backward(BackwardContext& c) {
  Tensor grad = c.grad() * mse_derivative(c);
  if (c.needs_grad(0)) c.set_grad(0, grad);
  if (c.needs_grad(1)) c.set_grad(1, -grad);
}

void mse_loss_forward(ForwardContext& c) {
  Tensor moved = sum_defined(c.tangent(0), c.has_tangent(1) ? -c.tangent(1) : Tensor());
  Tensor tangent = mse_derivative(c) * moved;
  if (static_cast<Reduction>(c.int_arg(2)) != Reduction::None) tangent = tangent.sum();
  c.set_tangent(0, std::move(tangent));
}

// ---- batching rules (Note [Batching rules])
// A loss reduces over one sample's elements only. The rules compute the unreduced
// losses of the whole batch with one call and reduce each sample's own; a mean
// divides by that sample's count (or target weights).

using batching::BatchedArg;

Tensor nll_loss_batched(const Tensor& input, const Tensor& target,
                        const std::optional<Tensor>& weight, int64_t reduction,
                        int64_t ignore_index) {
  constexpr const char* op = "strata::nll_loss";
  const batching::VmapLevel at = batching::current_vmap_level(op);
  const batching::BelowThisLevel below;
  const BatchedArg x = batching::unwrap(input, at.level), t = batching::unwrap(target, at.level);
  const std::optional<BatchedArg> w =
      weight ? std::optional(batching::unwrap(*weight, at.level)) : std::nullopt;
  const bool weight_batched = w && w->batched();
  const std::optional<Tensor> shared_weight =
      w && !weight_batched ? std::optional(w->value) : std::nullopt;
  if (!x.batched() && !t.batched() && !weight_batched) {
    return nll_loss(x.value, t.value, shared_weight, static_cast<Reduction>(reduction),
                    ignore_index);
  }
  check_reduction(reduction, op);
  STRATA_CHECK((input.dim() == 1 || input.dim() == 2) && target.dim() == input.dim() - 1 &&
                   (input.dim() == 1 || target.size(0) == input.size(0)),
               op, "expected input [N, C] with target [N], or input [C] with a 0-dim target, ",
               "got ", shape_string(input.sizes()), " and ", shape_string(target.sizes()),
               " (inside vmap)");
  const int64_t batch = at.batch_size, classes = input.size(-1);
  const int64_t rows = input.dim() == 2 ? input.size(0) : 1;
  const Tensor labels = batching::batch_first_expanded(t, batch).reshape({batch * rows});
  Tensor losses =
      nll_loss(batching::batch_first_expanded(x, batch).reshape({batch * rows, classes}), labels,
               shared_weight, Reduction::None, ignore_index);
  // Each row's target weight (0 for an ignored target), which nll_loss reads off -weight.
  auto target_weights = [&] {
    if (!w) return (labels != ignore_index).to(x.value.dtype());
    const Tensor negated =
        weight_batched ? batching::batch_first(*w).neg().unsqueeze(1).expand({batch, rows, classes})
                       : w->value.neg().expand({batch, rows, classes});
    return nll_loss(negated.reshape({batch * rows, classes}), labels, std::nullopt, Reduction::None,
                    ignore_index);
  };
  std::optional<Tensor> weights;
  if (weight_batched) {
    weights = target_weights();
    losses = losses * *weights;
  }
  if (static_cast<Reduction>(reduction) == Reduction::None) {
    DimVector sizes{batch};
    for (int64_t s : target.sizes()) sizes.push_back(s);
    return batching::make_batched(losses.view(sizes), 0, at.level);
  }
  // Each sample's sum over its rows; a single row (a per-sample loss) is its own sum.
  auto per_sample_sum = [&](const Tensor& per_row) {
    return rows == 1 ? per_row : per_row.view({batch, rows}).sum({1});
  };
  Tensor total = per_sample_sum(losses);
  if (static_cast<Reduction>(reduction) == Reduction::Mean) {
    if (!weights) weights = target_weights();
    total = total / per_sample_sum(*weights);
  }
  return batching::make_batched(total, 0, at.level);
}

Tensor mse_loss_batched(const Tensor& input, const Tensor& target, int64_t reduction) {
  constexpr const char* op = "strata::mse_loss";
  const batching::VmapLevel at = batching::current_vmap_level(op);
  const batching::BelowThisLevel below;
  const BatchedArg a = batching::unwrap(input, at.level), b = batching::unwrap(target, at.level);
  if (!a.batched() && !b.batched()) {
    return mse_loss(a.value, b.value, static_cast<Reduction>(reduction));
  }
  check_reduction(reduction, op);
  const int64_t rank =
      static_cast<int64_t>(broadcast_shapes(input.sizes(), target.sizes(), op).size());
  // Batched, a 0-dim sample has a dim and would promote differently.
  const ScalarType dtype = result_type(input, target);
  auto operand = [&](const BatchedArg& arg) {
    const Tensor value = batching::batch_first_padded(arg, rank);
    return value.dtype() == dtype ? value : value.to(dtype);
  };
  Tensor losses = mse_loss(operand(a), operand(b), Reduction::None);
  if (static_cast<Reduction>(reduction) != Reduction::None && rank > 0) {
    DimVector sample_dims;
    for (int64_t d = 1; d <= rank; ++d) sample_dims.push_back(d);
    losses = static_cast<Reduction>(reduction) == Reduction::Mean ? losses.mean(sample_dims)
                                                                  : losses.sum(sample_dims);
  }
  return batching::make_batched(losses, 0, at.level);
}

// ---- the rows (Note [One op, one place]) ----
// FLOPs: nll_loss reads one input per target element and counts 2 there (the
// class weight's product and the reduction's add); mse_loss counts 3 per element of
// the broadcast inputs (the difference, its square and the reduction's add).

MetaList nll_loss_shape(OpArgs args) {
  const Tensor& input = shape::tensor_arg(args, 0);
  return shape::single(nll_loss_checked(input, shape::tensor_arg(args, 1),
                                        nn_detail::optional_tensor_arg(args, 2), args[3].to_int()),
                       input.dtype());
}

MetaList mse_loss_shape(OpArgs args) {
  return {
      mse_loss_checked(shape::tensor_arg(args, 0), shape::tensor_arg(args, 1), args[2].to_int())};
}

int64_t nll_loss_flops(OpArgs args, const MetaList&) {
  return 2 * shape::tensor_arg(args, 1).numel();
}

int64_t mse_loss_flops(OpArgs args, const MetaList&) {
  return 3 *
         nn_detail::numel(broadcast_shapes(shape::tensor_arg(args, 0).sizes(),
                                           shape::tensor_arg(args, 1).sizes(), "strata::mse_loss"));
}

const OpFamily kLossOps("nn_loss", {
    {.schema = "nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
               "int ignore_index=-100) -> Tensor",
     .cpu = &nll_loss_cpu,
     .cuda = &nll_loss_cpu,
     .derivative = derivative({.backward = &nll_loss_backward,
                               .forward = &nll_loss_forward,
                               .saved_inputs = args(0, 1, 2),
                               .saved_outputs = args(0)}),
     .batching = &nll_loss_batched,
     .shape = &nll_loss_shape,
     .flops = &nll_loss_flops},
    {.schema = "cross_entropy(Tensor self, Tensor target, int reduction=1) -> Tensor",
     .decomposition = &cross_entropy_composite},
    {.schema = "mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
     .cpu = &mse_loss_cpu,
     .cuda = &mse_loss_composite,
     .decomposition = &mse_loss_composite,
     .derivative = derivative({.backward = &mse_loss_backward,
                               .forward = &mse_loss_forward,
                               .saved_inputs = args(0, 1)}),
     .batching = &mse_loss_batched,
     .shape = &mse_loss_shape,
     .flops = &mse_loss_flops},
});

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                Reduction reduction, int64_t ignore_index) {
  return STRATA_OP("strata::nll_loss", "", NllLossSig)
      .call(input, target, weight, static_cast<int64_t>(reduction),
            ignore_index);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction) {
  return STRATA_OP("strata::cross_entropy", "", LossSig)
      .call(logits, target, static_cast<int64_t>(reduction));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return STRATA_OP("strata::mse_loss", "", LossSig)
      .call(input, target, static_cast<int64_t>(reduction));
}

}  // namespace strata::nn
