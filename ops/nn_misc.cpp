// linear, embedding, layer_norm and dropout (kernels in kernels/cpu/linear.cpp and
// kernels/cpu/nn_misc.cpp).
#include "kernels/cpu/nn_misc.h"

#include <utility>

#include "dispatcher/op_def.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/linalg.h"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/random.h"
#include "ops/device_choice.h"
#include "ops/elementwise_kernels.h"
#include "ops/linalg.h"
#include "ops/linalg_views.h"
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

using LinearSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&);
using EmbeddingSig = Tensor(const Tensor&, const Tensor&);
using LayerNormSig = Tensor(const Tensor&, IntArrayRef, const std::optional<Tensor>&,
                            const std::optional<Tensor>&, double);
using DropoutSig = Tensor(const Tensor&, double, bool, const Generator&);
using DropoutMaskSig = Tensor(const Tensor&, double, const Generator&);

// Checks that an optional parameter (bias, weight) has the input's dtype and `sizes`.
void check_parameter(const std::optional<Tensor>& parameter, IntArrayRef sizes, ScalarType dtype,
                     const char* op, const char* what) {
  if (!parameter) return;
  check_same_dtype(*parameter, dtype, op, what);
  STRATA_CHECK(parameter->sizes() == sizes, op, what, " has shape ",
               shape_string(parameter->sizes()), ", expected ", shape_string(sizes));
}

// Each op's checks and output sizes, shared by its kernel and its shape function
// (and the checks by its batching rule).

void check_linear_arguments(const Tensor& input, const Tensor& weight,
                            const std::optional<Tensor>& bias) {
  constexpr const char* op = "strata::linear";
  check_floating(input, op, "input");
  check_same_dtype(weight, input.dtype(), op, "weight");
  STRATA_CHECK(input.dim() >= 1, op, "expected an input of at least 1 dim [..., in_features]");
  STRATA_CHECK(weight.dim() == 2, op, "expected a 2-D weight [out_features, in_features], got ",
               "shape ", shape_string(weight.sizes()));
  const int64_t in_features = input.sizes().back(), out_features = weight.sizes()[0];
  STRATA_CHECK(weight.sizes()[1] == in_features, op, "input of shape ", shape_string(input.sizes()),
               " has ", in_features, " features but weight of shape ", shape_string(weight.sizes()),
               " expects ", weight.sizes()[1]);
  check_parameter(bias, {out_features}, input.dtype(), op, "bias");
}

DimVector linear_sizes(const Tensor& input, const Tensor& weight) {
  DimVector sizes(input.sizes());
  sizes.back() = weight.sizes()[0];
  return sizes;
}

Tensor linear_cpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  check_linear_arguments(input, weight, bias);
  const int64_t out_features = weight.sizes()[0];
  Tensor out = make_empty_tensor(linear_sizes(input, weight), input.dtype(), input.device(),
                                 "strata::linear");
  const int64_t rows = out_features == 0 ? 0 : out.numel() / out_features;
  const std::optional<Tensor> bias_data = contiguous(bias);
  cpu::linear_kernel(out, contiguous(input), contiguous(weight), bias_data ? &*bias_data : nullptr,
                     rows);
  return out;
}

// On the GPU: one cuBLAS product, out = input [rows, in] @ weight^T, with the
// bias broadcast into out first (beta = 1) when there is one.
Tensor linear_cuda(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  check_linear_arguments(input, weight, bias);
  const int64_t out_features = weight.sizes()[0];
  Tensor out = make_empty_tensor(linear_sizes(input, weight), input.dtype(), input.device(),
                                 "strata::linear");
  const int64_t rows = out_features == 0 ? 0 : out.numel() / out_features;
  const Tensor flat_input = contiguous(input).view({rows, weight.sizes()[1]});
  const Tensor flat_out = out.view({rows, out_features});
  if (bias) on_device::copy_kernel(flat_out, *bias);
  gpu::mm_kernel(flat_out, flat_input, weight.t(), bias ? 1 : 0, 1);
  return out;
}

// linear in ordinary ops (its decomposition facet).
Tensor linear_composite(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  check_linear_arguments(input, weight, bias);
  const Tensor product = input.matmul(weight.t());
  return bias ? product + *bias : product;
}

void check_embedding_arguments(const Tensor& weight, const Tensor& indices) {
  constexpr const char* op = "strata::embedding";
  STRATA_CHECK(weight.dim() == 2, op, "expected a 2-D weight [num_embeddings, dim], got shape ",
               shape_string(weight.sizes()));
  STRATA_CHECK(indices.dtype() == kInt64, op, "indices must be Int64, got ", indices.dtype());
}

DimVector embedding_sizes(const Tensor& weight, const Tensor& indices) {
  DimVector sizes(indices.sizes());
  sizes.push_back(weight.sizes()[1]);
  return sizes;
}

Tensor embedding_cpu(const Tensor& weight, const Tensor& indices) {
  check_embedding_arguments(weight, indices);
  Tensor out = make_empty_tensor(embedding_sizes(weight, indices), weight.dtype(), weight.device(),
                                 "strata::embedding");
  (on_device::any_cuda(out, weight, indices) ? gpu::embedding_kernel : cpu::embedding_kernel)(
      out, contiguous(weight), contiguous(indices));
  return out;
}

// The number of leading (not normalized) dims of the input, after checking the arguments.
int64_t check_layer_norm_arguments(const Tensor& input, IntArrayRef normalized_shape,
                                   const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& bias) {
  constexpr const char* op = "strata::layer_norm";
  check_floating(input, op, "input");
  const int64_t leading = input.dim() - static_cast<int64_t>(normalized_shape.size());
  bool matches = !normalized_shape.empty() && leading >= 0;
  for (size_t i = 0; matches && i < normalized_shape.size(); ++i) {
    matches = input.sizes()[leading + i] == normalized_shape[i];
  }
  STRATA_CHECK(matches, op, "normalized_shape ", shape_string(normalized_shape),
               " does not match the trailing dims of input of shape ", shape_string(input.sizes()));
  check_parameter(weight, normalized_shape, input.dtype(), op, "weight");
  check_parameter(bias, normalized_shape, input.dtype(), op, "bias");
  return leading;
}

Tensor layer_norm_cpu(const Tensor& input, IntArrayRef normalized_shape,
                      const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                      double eps) {
  const int64_t leading = check_layer_norm_arguments(input, normalized_shape, weight, bias);
  // With no elements there are no rows: the leading sizes' product may pass int64
  // ([2, 2^63 - 1, 0] from group_norm with num_groups 2^63 - 1 over 0 channels).
  int64_t rows = input.numel() == 0 ? 0 : 1;
  for (int64_t d = 0; d < leading && rows != 0; ++d) rows *= input.sizes()[d];
  Tensor out =
      make_empty_tensor(input.sizes(), input.dtype(), input.device(), "strata::layer_norm");
  const std::optional<Tensor> weight_data = contiguous(weight), bias_data = contiguous(bias);
  const auto kernel = on_device::any_cuda(out, input, weight, bias) ? gpu::layer_norm_kernel
                                                                     : cpu::layer_norm_kernel;
  kernel(out, contiguous(input), weight_data ? &*weight_data : nullptr,
         bias_data ? &*bias_data : nullptr, rows, eps);
  return out;
}

// layer_norm in ordinary ops (its decomposition facet): normalized over the
// trailing normalized_shape.size() dims with the biased variance.
Tensor layer_norm_composite(const Tensor& input, IntArrayRef normalized_shape,
                            const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                            double eps) {
  check_layer_norm_arguments(input, normalized_shape, weight, bias);
  DimVector dims;
  for (int64_t d = input.dim() - static_cast<int64_t>(normalized_shape.size()); d < input.dim(); ++d) {
    dims.push_back(d);
  }
  const Tensor centered = input - input.mean(dims, true);
  const Tensor variance = (centered * centered).mean(dims, true);
  Tensor out = centered * (variance + eps).rsqrt();
  if (weight) out = out * *weight;
  if (bias) out = out + *bias;
  return out;
}

void check_probability(double p, const char* op) {
  STRATA_CHECK(p >= 0 && p <= 1, op, "dropout probability must be in [0, 1], got ", p);
}

void check_dropout_mask_arguments(const Tensor& input, double p) {
  check_floating(input, "strata::dropout_mask", "input");
  check_probability(p, "strata::dropout_mask");
}

Tensor dropout_mask_cpu(const Tensor& input, double p, const Generator& gen) {
  check_dropout_mask_arguments(input, p);
  Tensor mask =
      make_empty_tensor(input.sizes(), input.dtype(), input.device(), "strata::dropout_mask");
  const uint64_t first = gen.reserve(static_cast<uint64_t>(mask.numel()));
  (on_device::any_cuda(mask) ? gpu::dropout_mask_kernel : cpu::dropout_mask_kernel)(
      mask, p, gen.seed(), first);
  return mask;
}

// In evaluation (or with p = 0) dropout is the identity and returns the input itself.
Tensor dropout_composite(const Tensor& input, double p, bool train, const Generator& gen) {
  check_probability(p, "strata::dropout");
  if (!train || p == 0) return input;
  return input * STRATA_OP("strata::dropout_mask", "", DropoutMaskSig).call(input, p, gen);
}

// ---- derivatives (Note [Derivative formulas])

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;
using autograd::sum_defined;

// t as a matrix [rows, t.size(-1)], rows running over every leading dim (1 for a
// 1-D t): a view when t's strides allow it.
Tensor as_rows(const Tensor& t) {
  const int64_t columns = t.sizes().back();
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) rows *= t.sizes()[d];
  return t.reshape({rows, columns});
}

// out = x W^T + b over the rows of x: one GEMM per operand's gradient.
void linear_backward(BackwardContext& c) {
  const Tensor g = as_rows(c.grad());  // [rows, out]
  if (c.needs_grad(0)) c.set_grad(0, g.mm(c.input(1)).view(c.input_sizes(0)));
  if (c.needs_grad(1)) c.set_grad(1, g.t().mm(as_rows(c.input(0))));
  if (c.needs_grad(2)) c.set_grad(2, g.sum({0}));
}

// d out = linear(dx, W) + linear(x, dW) + db: one linear per operand with a
// tangent, whichever runs first adding the bias's tangent; alone, that tangent
// broadcasts to the output.
void linear_forward(ForwardContext& c) {
  std::optional<Tensor> bias;
  if (c.has_tangent(2)) bias = c.tangent(2);
  Tensor tangent = autograd::bilinear_tangent(c, 0, 1, [&](const Tensor& x, const Tensor& w) {
    return linear(x, w, std::exchange(bias, std::nullopt));
  });
  c.set_tangent(0, bias ? *bias : std::move(tangent));
}

// Row i of the table gets the sum of the gradient rows of the positions that looked it up.
void embedding_backward(BackwardContext& c) {
  if (!c.needs_grad(0)) return;
  const Tensor& g = c.grad();
  c.set_grad(0, zeros(c.input_sizes(0), g.dtype(), g.device())
                    .index_add(0, c.input(1).reshape({-1}), as_rows(g)));
}

// out = x^ * weight + bias with x^ the normalised input. The input's gradient is
// the fused layer_norm_backward op (its Jacobian is symmetric, so it maps tangents
// too); the weight's needs x^, which layer_norm without parameters gives in one pass.
Tensor normalized(const autograd::FormulaArguments& c, const Tensor& input) {
  return layer_norm(input, c.int_list_arg(1), std::nullopt, std::nullopt, c.double_arg(4));
}

void layer_norm_grad(BackwardContext& c) {
  const Tensor& g = c.grad();
  if (c.needs_grad(3)) c.set_grad(3, g);  // leading dims are summed away by the caller
  if (c.needs_grad(0)) {
    const std::optional<Tensor> weight =
        c.arg(2).is_none() ? std::nullopt : std::optional(c.input(2));
    c.set_grad(0, layer_norm_backward(g, c.input(0), c.int_list_arg(1), weight, c.double_arg(4)));
  }
  if (c.needs_grad(2)) c.set_grad(2, g * normalized(c, c.input(0)));
}

void layer_norm_tangent(ForwardContext& c) {
  Tensor tangent;
  if (c.has_tangent(0)) {
    tangent = layer_norm_backward(c.tangent(0), c.input(0), c.int_list_arg(1), std::nullopt,
                                  c.double_arg(4));
    if (!c.arg(2).is_none()) tangent = tangent * c.input(2);
  }
  if (c.has_tangent(2)) {
    tangent = sum_defined(std::move(tangent), normalized(c, c.input(0)) * c.tangent(2));
  }
  tangent = sum_defined(std::move(tangent), c.tangent(3));
  c.set_tangent(0, std::move(tangent));
}

// ---- batching rules (Note [Batching rules]); dropout's mask is random, so the vmap
// interpreter handles it before any rule.

using batching::BatchedArg;

std::optional<BatchedArg> unwrap_optional(const std::optional<Tensor>& t, int64_t level) {
  if (!t) return std::nullopt;
  return batching::unwrap(*t, level);
}

bool batched(const std::optional<BatchedArg>& arg) { return arg && arg->batched(); }

// The value of an optional argument shared by every sample, else none.
std::optional<Tensor> shared_value(const std::optional<BatchedArg>& arg) {
  if (!arg || arg->batched()) return std::nullopt;
  return arg->value;
}

// With a shared weight the batch joins the input's rows: one GEMM. Per-sample
// weights: one bmm, sample by sample.
Tensor linear_batched(const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias) {
  check_linear_arguments(input, weight, bias);
  const batching::VmapLevel at = batching::current_vmap_level("strata::linear");
  const batching::BelowThisLevel below;
  const BatchedArg x = batching::unwrap(input, at.level);
  const BatchedArg w = batching::unwrap(weight, at.level);
  const std::optional<BatchedArg> b = unwrap_optional(bias, at.level);
  if (!w.batched()) {
    // The batch must not sit among the features the GEMM reduces over.
    const bool batch_last = x.batched() && *x.bdim == x.value.dim() - 1;
    const BatchedArg rows = batch_last ? BatchedArg{batching::batch_first(x), 0} : x;
    const BatchedArg out{linear(rows.value, w.value, shared_value(b)), rows.bdim};
    if (!batched(b)) return batching::make_batched(out.value, out.bdim, at.level);
    const Tensor biased =
        batching::batch_first(out) + batching::batch_first_padded(*b, x.logical_dim());
    return batching::make_batched(biased, 0, at.level);
  }
  // A shared input is an expanded (stride-0) batch of inputs: bmm reads it in place.
  // (Folding the weights into one GEMM's output features instead would run that
  // GEMM in blocks of the few input rows, each packing every sample's weight.)
  const Tensor inputs = batching::batch_first_expanded(x, at.batch_size);
  const Tensor rows = linalg::fold_dims(inputs, {1, x.logical_dim() - 1, 1});
  Tensor out = bmm(rows, batching::batch_first(w).transpose(1, 2));
  if (b) out = out + (b->batched() ? batching::batch_first(*b).unsqueeze(1) : b->value);
  DimVector sizes(inputs.sizes());
  sizes.back() = weight.sizes()[0];
  return batching::make_batched(out.view(sizes), 0, at.level);
}

// With a shared table the lookup runs on the whole batch of indices. Per-sample
// tables: sample b gathers its rows from table b.
Tensor embedding_batched(const Tensor& weight, const Tensor& indices) {
  check_embedding_arguments(weight, indices);
  const batching::VmapLevel at = batching::current_vmap_level("strata::embedding");
  const batching::BelowThisLevel below;
  const BatchedArg w = batching::unwrap(weight, at.level);
  const BatchedArg i = batching::unwrap(indices, at.level);
  if (!w.batched()) return batching::make_batched(embedding(w.value, i.value), i.bdim, at.level);
  const Tensor tables = batching::batch_first(w);  // [B, rows, dim]
  const Tensor per_sample = batching::batch_first_expanded(i, at.batch_size);
  const int64_t dim = weight.sizes()[1];
  const int64_t count = indices.numel();
  const Tensor rows =
      per_sample.reshape({at.batch_size, count, 1}).expand({at.batch_size, count, dim});
  DimVector sizes(per_sample.sizes());
  sizes.push_back(dim);
  return batching::make_batched(tables.gather(1, rows).view(sizes), 0, at.level);
}

// The batch joins the leading dims the kernel normalizes row by row; per-sample
// weights and biases apply after the kernel (the weight first).
Tensor layer_norm_batched(const Tensor& input, IntArrayRef normalized_shape,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          double eps) {
  const int64_t leading = check_layer_norm_arguments(input, normalized_shape, weight, bias);
  const batching::VmapLevel at = batching::current_vmap_level("strata::layer_norm");
  const batching::BelowThisLevel below;
  const BatchedArg x = batching::unwrap(input, at.level);
  const std::optional<BatchedArg> w = unwrap_optional(weight, at.level);
  const std::optional<BatchedArg> b = unwrap_optional(bias, at.level);
  const bool batch_normalized = x.batched() && *x.bdim > leading;
  const BatchedArg rows = batch_normalized ? BatchedArg{batching::batch_first(x), 0} : x;
  const std::optional<Tensor> kernel_bias = batched(w) ? std::nullopt : shared_value(b);
  const BatchedArg out{layer_norm(rows.value, normalized_shape, shared_value(w), kernel_bias, eps),
                       rows.bdim};
  if (!batched(w) && !batched(b)) return batching::make_batched(out.value, out.bdim, at.level);
  const int64_t rank = x.logical_dim();
  Tensor result = batching::batch_first(out);
  if (batched(w)) result = result * batching::batch_first_padded(*w, rank);
  if (b && !kernel_bias) result = result + batching::batch_first_padded(*b, rank);
  return batching::make_batched(result, 0, at.level);
}

// ---- the rows (Note [One op, one place]) ----
// FLOPs: linear 2 * rows * in * out for the product, plus 1 per output element for
// the bias; embedding only gathers rows. layer_norm counts 5 per element to
// normalize (the mean's add, the centring, the variance's square and add, the
// scaling by 1 / std), plus 1 each for the weight and the bias. dropout_mask's
// sampling is not counted.

MetaList linear_shape(OpArgs args) {
  const Tensor& input = shape::tensor_arg(args, 0);
  const Tensor& weight = shape::tensor_arg(args, 1);
  check_linear_arguments(input, weight, nn_detail::optional_tensor_arg(args, 2));
  return shape::single(linear_sizes(input, weight), input.dtype());
}

MetaList embedding_shape(OpArgs args) {
  const Tensor& weight = shape::tensor_arg(args, 0);
  const Tensor& indices = shape::tensor_arg(args, 1);
  check_embedding_arguments(weight, indices);
  return shape::single(embedding_sizes(weight, indices), weight.dtype());
}

MetaList layer_norm_shape(OpArgs args) {
  check_layer_norm_arguments(shape::tensor_arg(args, 0), args[1].to_int_list(),
                             nn_detail::optional_tensor_arg(args, 2),
                             nn_detail::optional_tensor_arg(args, 3));
  return shape::same_as_self(args);
}

MetaList dropout_mask_shape(OpArgs args) {
  check_dropout_mask_arguments(shape::tensor_arg(args, 0), args[1].to_double());
  return shape::same_as_self(args);
}

int64_t linear_flops(OpArgs args, const MetaList& outputs) {
  const int64_t out = nn_detail::numel(outputs.at(0).sizes);
  const int64_t in_features = shape::tensor_arg(args, 1).size(1);
  return 2 * out * in_features + (args[2].is_none() ? 0 : out);
}

int64_t layer_norm_flops(OpArgs args, const MetaList& outputs) {
  const int64_t per_element = 5 + (args[2].is_none() ? 0 : 1) + (args[3].is_none() ? 0 : 1);
  return per_element * nn_detail::numel(outputs.at(0).sizes);
}

const OpFamily kNnMiscOps("nn_misc", {
    {.schema = "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
     .cpu = &linear_cpu,
     .cuda = &linear_cuda,
     .decomposition = &linear_composite,
     .derivative = derivative(
         {.backward = &linear_backward, .forward = &linear_forward, .saved_inputs = args(0, 1)}),
     .batching = &linear_batched,
     .shape = &linear_shape,
     .flops = &linear_flops},
    {.schema = "embedding(Tensor weight, Tensor indices) -> Tensor",
     .cpu = &embedding_cpu,
     .cuda = &embedding_cpu,
     .derivative = derivative({.backward = &embedding_backward,
                               .forward = &autograd::linear_forward,
                               .saved_inputs = args(1)}),
     .batching = &embedding_batched,
     .shape = &embedding_shape,
     .flops = &flops::zero},
    {.schema = "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, "
               "Tensor? bias=None, float eps=1e-05) -> Tensor",
     .cpu = &layer_norm_cpu,
     .cuda = &layer_norm_cpu,
     .decomposition = &layer_norm_composite,
     .derivative = derivative({.backward = &layer_norm_grad,
                               .forward = &layer_norm_tangent,
                               .saved_inputs = args(0, 2)}),
     .batching = &layer_norm_batched,
     .shape = &layer_norm_shape,
     .flops = &layer_norm_flops},
    // Zeros with probability p, else 1 / (1 - p): the factor dropout multiplies by.
    {.schema = "dropout_mask(Tensor self, float p, Generator generator) -> Tensor",
     .cpu = &dropout_mask_cpu,
     .cuda = &dropout_mask_cpu,
     .derivative = {autograd::non_differentiable(), "random: a mask depends on no input's values"},
     .batching = Absent{"random: the vmap interpreter draws each sample's mask (Randomness)"},
     .shape = &dropout_mask_shape,
     .flops = &flops::zero},
    {.schema = "dropout(Tensor input, float p, bool train, Generator generator) -> Tensor",
     .decomposition = &dropout_composite},
});

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  return STRATA_OP("strata::linear", "", LinearSig).call(input, weight, bias);
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return STRATA_OP("strata::embedding", "", EmbeddingSig).call(weight, indices);
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps) {
  return STRATA_OP("strata::layer_norm", "", LayerNormSig)
      .call(input, normalized_shape, weight, bias, eps);
}

Tensor dropout(const Tensor& input, double p, bool train, const Generator& gen) {
  return STRATA_OP("strata::dropout", "", DropoutSig).call(input, p, train, gen);
}

}  // namespace strata::nn
