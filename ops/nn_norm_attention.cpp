// batch_norm, scaled_dot_product_attention and conv1d as composite
// rows: each is defined by a decomposition into ops that have every facet
// (layer_norm, the reductions, matmul, softmax, conv2d), so its derivative in
// both modes, its batching rule, shape and FLOPs are theirs (Note [One op, one
// place]). Only the argument checks are their own, so that bad input is named
// after the op the caller called.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "dispatcher/op_def.h"
#include "ops/nn_common.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "transforms/grad/no_grad.h"

namespace strata::nn {
namespace {

using nn_detail::channel_affine;
using nn_detail::channel_shape;
using nn_detail::check_channels_input;
using nn_detail::check_per_channel;
using OptionalTensor = std::optional<Tensor>;
using BatchNormSig = Tensor(const Tensor&, const OptionalTensor&, const OptionalTensor&,
                            const OptionalTensor&, const OptionalTensor&, bool, double, double);
using AttentionSig = Tensor(const Tensor&, const Tensor&, const Tensor&, const OptionalTensor&,
                            bool);
using Conv1dSig = Tensor(const Tensor&, const Tensor&, const OptionalTensor&, IntArrayRef,
                         IntArrayRef, IntArrayRef, int64_t);

Tensor batch_norm_composite(const Tensor& input, const OptionalTensor& running_mean,
                            const OptionalTensor& running_var, const OptionalTensor& weight,
                            const OptionalTensor& bias, bool training, double momentum,
                            double eps) {
  const char* op = "strata::batch_norm";
  const int64_t channels = check_channels_input(input, op);
  check_per_channel(running_mean, channels, "running_mean", input, op);
  check_per_channel(running_var, channels, "running_var", input, op);
  check_per_channel(weight, channels, "weight", input, op);
  check_per_channel(bias, channels, "bias", input, op);
  STRATA_CHECK(running_mean.has_value() == running_var.has_value(), op,
               "running_mean and running_var must be given together");
  const DimVector shape = channel_shape(channels, input.dim());
  if (!training) {
    STRATA_CHECK(running_mean.has_value(), op,
                 "evaluation (training=false) normalises by the running statistics: "
                 "running_mean and running_var must be given");
    const Tensor scale = (running_var->reshape(shape) + eps).rsqrt();
    return channel_affine((input - running_mean->reshape(shape)) * scale, weight, bias, shape);
  }
  DimVector dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  const int64_t count = input.numel() / std::max<int64_t>(channels, 1);
  STRATA_CHECK(count > 1, op, "training needs more than 1 value per channel, got input shape ",
               shape_string(input.sizes()));
  const Tensor mean = input.mean(dims, /*keepdim=*/true);
  const Tensor centered = input - mean;
  const Tensor var = centered.square().mean(dims, /*keepdim=*/true);  // biased, as normalised
  if (running_mean) {
    // The statistics are state, not part of the function: nothing flows into them.
    NoGradGuard no_grad;
    const double unbiased = static_cast<double>(count) / static_cast<double>(count - 1);
    running_mean->copy_(*running_mean * (1.0 - momentum) +
                        stop_gradient(mean).reshape({channels}) * momentum);
    running_var->copy_(*running_var * (1.0 - momentum) +
                       stop_gradient(var).reshape({channels}) * (momentum * unbiased));
  }
  return channel_affine(centered * (var + eps).rsqrt(), weight, bias, shape);
}

void check_attention(const Tensor& q, const Tensor& k, const Tensor& v, const OptionalTensor& mask,
                     bool is_causal) {
  const char* op = "strata::scaled_dot_product_attention";
  auto shapes = [&] {
    return "query " + shape_string(q.sizes()) + ", key " + shape_string(k.sizes()) + ", value " +
           shape_string(v.sizes());
  };
  STRATA_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op,
               "query, key and value need at least 2 dims [..., L, E], got ", shapes());
  STRATA_CHECK(is_floating_point(q.dtype()) && q.dtype() == k.dtype() && q.dtype() == v.dtype(), op,
               "query, key and value must share one floating-point dtype, got ", q.dtype(), ", ",
               k.dtype(), ", ", v.dtype());
  STRATA_CHECK(q.size(-1) == k.size(-1), op,
               "query and key must have the same embedding size (last dim), got ", shapes());
  STRATA_CHECK(k.size(-2) == v.size(-2), op,
               "key and value must have the same sequence length (dim -2), got ", shapes());
  if (!mask) return;
  STRATA_CHECK(!is_causal, op, "give either attn_mask or is_causal, not both");
  STRATA_CHECK(mask->dtype() == kBool || mask->dtype() == q.dtype(), op,
               "attn_mask must be Bool (true: attend) or the query's dtype ", q.dtype(),
               " (added to the scores), got ", mask->dtype());
  DimVector scores(q.sizes());
  scores.back() = k.size(-2);
  bool fits = mask->dim() <= static_cast<int64_t>(scores.size());
  for (int64_t d = 1; fits && d <= mask->dim(); ++d) {
    const int64_t m = mask->size(-d);
    fits = m == 1 || m == scores[scores.size() - static_cast<size_t>(d)];
  }
  STRATA_CHECK(fits, op, "attn_mask of shape ", shape_string(mask->sizes()),
               " does not broadcast to the scores' shape ", shape_string(scores), " (", shapes(),
               ")");
}

// The scale goes on the query ([L, E]) rather than on the scores ([L, S]), and every
// mask becomes an additive one (0 or -inf) of the mask's own shape: adding it to the
// scores is one vectorised pass whose backward passes the gradient on unchanged, where
// masked_fill would cost a pass of its own in each direction.
Tensor attention_composite(const Tensor& q, const Tensor& k, const Tensor& v,
                           const OptionalTensor& mask, bool is_causal) {
  check_attention(q, k, v, mask, is_causal);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  Tensor scores = matmul(q * scale, k.transpose(-2, -1));
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  auto additive = [&](const Tensor& drop) {
    return zeros(drop.sizes(), q.dtype(), q.device()).masked_fill(drop, kNegInf);
  };
  if (is_causal) {
    // Query i attends to keys 0..i.
    scores = scores + additive(arange(k.size(-2), kInt64, q.device()).unsqueeze(0) >
                               arange(q.size(-2), kInt64, q.device()).unsqueeze(1));
  } else if (mask) {
    scores = scores + (mask->dtype() == kBool ? additive(mask->logical_not()) : *mask);
  }
  return matmul(softmax(scores, -1), v);
}

// conv2d over [N, C, 1, L] with a [O, C / groups, 1, k] kernel.
Tensor conv1d_composite(const Tensor& input, const Tensor& weight, const OptionalTensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                        int64_t groups) {
  const char* op = "strata::conv1d";
  STRATA_CHECK(input.dim() == 3 && weight.dim() == 3, op,
               "expected an input [N, C, L] and a weight [O, C / groups, k], got shapes ",
               shape_string(input.sizes()), " and ", shape_string(weight.sizes()));
  for (IntArrayRef arg : {stride, padding, dilation}) {
    STRATA_CHECK(arg.size() == 1, op, "stride, padding and dilation take one value each, got ",
                 shape_string(arg));
  }
  const Tensor out = conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias, {1, stride[0]},
                            {0, padding[0]}, {1, dilation[0]}, groups);
  return out.squeeze(2);
}

const OpFamily kNormAttentionOps("nn_norm_attention", {
    {.schema = "batch_norm(Tensor input, Tensor(a!)? running_mean, Tensor(b!)? running_var, "
               "Tensor? weight=None, Tensor? bias=None, bool training=False, "
               "float momentum=0.1, float eps=1e-05) -> Tensor",
     .decomposition = &batch_norm_composite},
    {.schema = "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
               "Tensor? attn_mask=None, bool is_causal=False) -> Tensor",
     .decomposition = &attention_composite},
    {.schema = "conv1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, "
               "int[1] padding=0, int[1] dilation=1, int groups=1) -> Tensor",
     .decomposition = &conv1d_composite},
});

}  // namespace

Tensor batch_norm(const Tensor& input, const OptionalTensor& running_mean,
                  const OptionalTensor& running_var, const OptionalTensor& weight,
                  const OptionalTensor& bias, bool training, double momentum, double eps) {
  return STRATA_OP("strata::batch_norm", "", BatchNormSig)
      .call(input, running_mean, running_var, weight, bias, training, momentum, eps);
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const OptionalTensor& attn_mask, bool is_causal) {
  return STRATA_OP("strata::scaled_dot_product_attention", "", AttentionSig)
      .call(query, key, value, attn_mask, is_causal);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const OptionalTensor& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return STRATA_OP("strata::conv1d", "", Conv1dSig)
      .call(input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const OptionalTensor& bias, int64_t stride,
              int64_t padding) {
  return conv1d(input, weight, bias, IntArrayRef(stride), IntArrayRef(padding));
}

}  // namespace strata::nn
