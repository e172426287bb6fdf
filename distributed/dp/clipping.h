#pragma once

// Per-sample gradient clipping for DP-SGD. The input is a tree of per-sample
// gradients (every leaf with the batch on dim 0, as vmap(grad) returns them);
// the output is the batch's sum of the clipped gradients, a tree of the
// parameters' shapes. A sample's gradient g is scaled by min(1, C / (|g| + 1e-6))
// (Opacus' factor), so its norm is at most C:
// - flat: |g| is the norm of all of the sample's leaves together, one bound C;
// - per layer: every leaf l is clipped alone to its own bound C_l, so the whole
//   sample's norm is at most sqrt(sum C_l^2) (the sensitivity the noise needs).
// An empty batch (dim 0 of size 0) gives zeros.

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

#include <vector>

namespace strata::dp {

template <class Tree>
struct ClippedSum {
  Tree sum;      // shaped like the parameters
  Tensor norms;  // Float64, each sample's norm before clipping: [B] (flat) or [B, leaves]
};

// min(1, C / (norm + 1e-6)), per sample (Float64 norms in, factors out).
Tensor clip_factor(const Tensor& norms, double max_norm);

// Refuses an empty tree, a bound count other than 1 (flat) or one per leaf, and
// bounds that are not positive and finite.
void check_clipping_bounds(size_t leaves, const std::vector<double>& max_norms, bool per_layer,
                           const char* tag);

// The core, over the flattened leaves: max_norms has one bound (flat) or one per leaf.
ClippedSum<std::vector<Tensor>> clip_and_sum_leaves(const std::vector<Tensor>& per_sample,
                                                    const std::vector<double>& max_norms,
                                                    bool per_layer);

template <class Tree>
ClippedSum<Tree> clip_and_sum(const Tree& per_sample, double max_norm) {
  auto [sum, norms] = clip_and_sum_leaves(tree::flatten(per_sample), {max_norm}, false);
  return {tree::unflatten_like(per_sample, sum), norms};
}

// max_norms: one bound per leaf, in tree order (a map's: by key).
template <class Tree>
ClippedSum<Tree> clip_and_sum_per_layer(const Tree& per_sample,
                                        const std::vector<double>& max_norms) {
  auto [sum, norms] = clip_and_sum_leaves(tree::flatten(per_sample), max_norms, true);
  return {tree::unflatten_like(per_sample, sum), norms};
}

}  // namespace strata::dp
