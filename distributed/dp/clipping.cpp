#include "distributed/dp/clipping.h"

#include <cmath>

namespace strata::dp {

namespace {

constexpr char kTag[] = "dp::clip_and_sum";

// The per-sample gradient of one leaf as [B, rest]: rows are samples.
Tensor rows(const Tensor& leaf, int64_t batch) {
  return leaf.reshape({batch, batch == 0 ? 0 : leaf.numel() / batch});
}

// sum_b factor[b] * leaf[b]: one GEMV instead of a scaled copy of every sample.
Tensor weighted_sum(const Tensor& leaf, const Tensor& factor) {
  const int64_t batch = leaf.size(0);
  const Shape shape(std::vector<int64_t>(leaf.sizes().begin() + 1, leaf.sizes().end()));
  if (batch == 0) return zeros(shape, leaf.dtype(), leaf.device());
  return factor.to(leaf.dtype()).matmul(rows(leaf, batch)).reshape(shape);
}

}  // namespace

Tensor clip_factor(const Tensor& norms, double max_norm) {
  return (max_norm / (norms + 1e-6)).clamp(std::nullopt, 1.0);
}

void check_clipping_bounds(size_t leaves, const std::vector<double>& max_norms, bool per_layer,
                           const char* tag) {
  STRATA_CHECK(leaves > 0, tag, "the tree of parameters has no tensors");
  const size_t expected_bounds = per_layer ? leaves : 1;
  STRATA_CHECK(max_norms.size() == expected_bounds, tag, "got ", max_norms.size(),
               " clipping bounds for ", leaves, " leaves (",
               per_layer ? "per layer: one per leaf" : "flat: one", ")");
  for (double c : max_norms) {
    STRATA_CHECK(c > 0 && std::isfinite(c), tag, "clipping bound ", c, " is not positive");
  }
}

ClippedSum<std::vector<Tensor>> clip_and_sum_leaves(const std::vector<Tensor>& per_sample,
                                                    const std::vector<double>& max_norms,
                                                    bool per_layer) {
  check_clipping_bounds(per_sample.size(), max_norms, per_layer, kTag);
  const int64_t batch = per_sample[0].dim() > 0 ? per_sample[0].size(0) : -1;
  for (size_t i = 0; i < per_sample.size(); ++i) {
    const Tensor& leaf = per_sample[i];
    STRATA_CHECK(leaf.defined() && is_floating_point(leaf.dtype()), kTag, "leaf ", i,
                 " is not a floating-point tensor");
    STRATA_CHECK(leaf.dim() > 0 && leaf.size(0) == batch, kTag, "leaf ", i,
                 " has no batch dim 0 of size ", batch, " like leaf 0 (it has ", leaf.dim(),
                 " dims, dim 0 of size ", leaf.dim() > 0 ? leaf.size(0) : 0, ")");
  }

  // Every leaf's per-sample norms as columns of [B, leaves], in Float64.
  std::vector<Tensor> columns;
  for (const Tensor& leaf : per_sample) {
    columns.push_back(batch == 0 ? zeros({0}, kFloat64, leaf.device())
                                 : rows(leaf, batch).norm(2, {1}).to(kFloat64));
  }
  const Tensor norms = stack(columns, 1);

  std::vector<Tensor> sum;
  if (per_layer) {
    for (size_t i = 0; i < per_sample.size(); ++i) {
      sum.push_back(weighted_sum(per_sample[i], clip_factor(norms.select(1, static_cast<int64_t>(i)),
                                                            max_norms[i])));
    }
    return {sum, norms};
  }
  const Tensor total = norms.square().sum({1}).sqrt();
  const Tensor factor = clip_factor(total, max_norms[0]);
  for (const Tensor& leaf : per_sample) sum.push_back(weighted_sum(leaf, factor));
  return {sum, total};
}

}  // namespace strata::dp
