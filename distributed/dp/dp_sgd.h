#pragma once

// DP-SGD over a group of ranks (st::dist::Group, or st::dist::LocalGroup for one
// process): Poisson batches, per-sample gradients by vmap(grad), per-sample
// clipping, the clipped sums all-reduced, Gaussian noise of std sigma C added
// once per step, divided by the expected batch size q N. See Note [One noise
// draw per step].

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "distributed/dp/clipping.h"
#include "distributed/dp/ghost_clipping.h"
#include "distributed/dp/poisson_sampling.h"
#include "distributed/dp/rdp_accountant.h"

namespace strata::dp {

struct DpSgdOptions {
  double noise_multiplier = 1.0;            // sigma
  double max_grad_norm = 1.0;               // C of flat clipping
  std::vector<double> max_grad_norms = {};  // per-layer clipping when not empty: one bound
                                            // per parameter leaf, in tree order
  uint64_t noise_seed = 0;                  // must be the same on every rank
  int64_t physical_batch = 0;  // samples per vmap(grad) call or ghost pass; 0: auto
                               // (auto_physical_batch, kGhostPhysicalBatch)
  double momentum = 0;         // heavy-ball momentum of DpSgd's update; it only
                               // post-processes private gradients: no privacy cost
};

// Samples per ghost-clipping pass when DpSgdOptions leaves it 0. One pass keeps
// every layer's input and output gradient (and a conv's per-sample weight
// gradients) alive at once; for the CNN of examples/dp_sgd_distributed.cpp at a
// batch of 2048 that is hundreds of MiB, freshly allocated and faulted in each
// step, against a few MiB in passes of 256.
inline constexpr int64_t kGhostPhysicalBatch = 256;

// The bound on one sample's clipped gradient: C, or sqrt(sum C_l^2) per layer.
double sensitivity(const DpSgdOptions& options);

// Note [One noise draw per step]
// The privacy analysis needs N(0, (sigma C)^2) noise added once to the sum of
// the clipped gradients of the whole (global) batch. If every rank added its own
// draw, the sum would carry W draws: sqrt(W) times too much noise. So rank 0
// alone adds it, to its local sum before the all-reduce (as Opacus' distributed
// optimizer does). The draw is a pure function of (noise seed, step): Philox
// counters from step * (number of parameter elements), so it is the same number
// whatever W, and one process reproduces a W-rank run exactly.
void add_noise(const std::vector<Tensor>& leaves, double std, uint64_t seed, int64_t step);

// Samples per vmap(grad) call when DpSgdOptions leaves it 0: enough for about
// 6 MiB of per-sample gradients, at least 16. Clipping reads the per-sample
// gradients twice (norms, then the weighted sum); in chunks that stay in cache
// that costs little, in one chunk of the whole batch it costs memory bandwidth:
// for the MLP of bench/dist_bench at B = 256, 9.4 ms a step in chunks of 16
// against 27.6 ms in one (bench/README.md).
int64_t auto_physical_batch(int64_t parameter_bytes);

// The leaf-wise sum over this rank's samples of their clipped gradients; zeros
// for an empty batch. sample_loss(params, x_i, y_i) is one sample's 0-dim loss.
template <class Loss, class Params>
Params local_clipped_sum(const Loss& sample_loss, const Params& params, const Tensor& x,
                         const Tensor& y, const DpSgdOptions& options) {
  Params sum = tree::map(params, [](const Tensor& p) { return zeros_like(p); });
  const std::vector<Tensor> sums = tree::flatten(sum);
  const int64_t batch = x.size(0);
  int64_t parameter_bytes = 0;
  for (const Tensor& s : sums) parameter_bytes += s.numel() * element_size(s.dtype());
  const int64_t chunk = options.physical_batch > 0 ? options.physical_batch
                                                   : auto_physical_batch(parameter_bytes);
  auto per_sample = vmap(grad(sample_loss), {.in_dims = {none, 0, 0}});
  for (int64_t first = 0; first < batch; first += chunk) {
    const int64_t n = std::min(chunk, batch - first);
    const Params g = per_sample(params, x.narrow(0, first, n), y.narrow(0, first, n));
    const std::vector<Tensor> clipped =
        options.max_grad_norms.empty()
            ? clip_and_sum_leaves(tree::flatten(g), {options.max_grad_norm}, false).sum
            : clip_and_sum_leaves(tree::flatten(g), options.max_grad_norms, true).sum;
    for (size_t i = 0; i < sums.size(); ++i) sums[i].add_(clipped[i]);
  }
  return sum;
}

// The same sum by ghost clipping (Note [Ghost clipping]): loss.batch_loss gives
// the batch's per-sample losses, physical_batch (or kGhostPhysicalBatch) bounds
// the samples of one pass.
template <class F, class Params>
Params local_clipped_sum(const GhostLoss<F>& loss, const Params& params, const Tensor& x,
                         const Tensor& y, const DpSgdOptions& options) {
  const bool per_layer = !options.max_grad_norms.empty();
  const std::vector<double> bounds =
      per_layer ? options.max_grad_norms : std::vector<double>{options.max_grad_norm};
  const int64_t batch = x.size(0);
  const int64_t chunk =
      options.physical_batch > 0 ? options.physical_batch : kGhostPhysicalBatch;
  if (batch <= chunk) return ghost_clip_and_sum(loss, params, x, y, bounds, per_layer).sum;
  Params sum = tree::map(params, [](const Tensor& p) { return zeros_like(p); });
  const std::vector<Tensor> sums = tree::flatten(sum);
  for (int64_t first = 0; first < batch; first += chunk) {
    const int64_t n = std::min(chunk, batch - first);
    const std::vector<Tensor> part = tree::flatten(
        ghost_clip_and_sum(loss, params, x.narrow(0, first, n), y.narrow(0, first, n), bounds,
                           per_layer)
            .sum);
    for (size_t i = 0; i < sums.size(); ++i) sums[i].add_(part[i]);
  }
  return sum;
}

// The private gradient of one step: every rank passes its own samples (possibly
// none) and all get the same result, (sum of clipped gradients + noise) / (q N).
// sample_loss: one sample's loss (per-sample gradients by vmap(grad)), or
// dp::ghost(batch_loss) for ghost clipping.
template <class Group, class Loss, class Params>
Params private_gradient(const Group& group, const Loss& sample_loss, const Params& params,
                        const Tensor& x, const Tensor& y, int64_t step,
                        double expected_batch_size, const DpSgdOptions& options) {
  STRATA_CHECK(expected_batch_size > 0, "dp::private_gradient", "expected batch size ",
               expected_batch_size, " must be positive");
  Params sum = local_clipped_sum(sample_loss, params, x, y, options);
  const std::vector<Tensor> leaves = tree::flatten(sum);
  if (group.rank() == 0) {
    add_noise(leaves, options.noise_multiplier * sensitivity(options), options.noise_seed, step);
  }
  group.all_reduce(sum);
  for (const Tensor& leaf : leaves) {
    leaf.div_(full({}, expected_batch_size, leaf.dtype(), leaf.device()));
  }
  return sum;
}

// A DP-SGD optimizer over a group: each step draws this rank's part of the
// Poisson batch from its shard, takes the private gradient and updates the
// parameters in place (p -= lr g, or with momentum v = momentum v + g,
// p -= lr v) on every rank alike; it counts the steps for the RDP accountant.
// Parameters and data may live on a GPU: the sampling and the noise are drawn on
// the CPU (the same numbers on every device) and moved to them.
template <class Group>
class DpSgd {
 public:
  DpSgd(Group group, PoissonSampler sampler, DpSgdOptions options, double learning_rate)
      : group_(std::move(group)),
        sampler_(std::move(sampler)),
        options_(std::move(options)),
        learning_rate_(learning_rate),
        shard_(dp::shard(sampler_.dataset_size(), group_.rank(), group_.size())) {
    STRATA_CHECK(options_.momentum >= 0 && options_.momentum < 1, "dp::DpSgd", "momentum ",
                 options_.momentum, " is not in [0, 1)");
  }

  // This rank's rows of the dataset: x_shard[i] is sample shard().begin + i.
  Shard shard() const { return shard_; }

  // One step on params (updated in place). Returns the size of the local batch.
  template <class Loss, class Params>
  int64_t step(const Loss& sample_loss, Params& params, const Tensor& x_shard,
               const Tensor& y_shard) {
    STRATA_CHECK(x_shard.dim() > 0 && x_shard.size(0) == shard_.size() &&
                     y_shard.dim() > 0 && y_shard.size(0) == shard_.size(),
                 "dp::DpSgd::step", "rank ", group_.rank(), " holds samples [", shard_.begin,
                 ", ", shard_.end, "): x and y need ", shard_.size(), " rows");
    std::vector<int64_t> rows = sampler_.sample(steps_, shard_);
    for (int64_t& r : rows) r -= shard_.begin;
    const Tensor index = tensor(rows, {static_cast<int64_t>(rows.size())}).to(x_shard.device());
    const Params g = private_gradient(group_, sample_loss, params, x_shard.index_select(0, index),
                                      y_shard.index_select(0, index), steps_,
                                      sampler_.expected_batch_size(), options_);
    const std::vector<Tensor> ps = tree::flatten(params), gs = tree::flatten(g);
    if (options_.momentum == 0) {
      for (size_t i = 0; i < ps.size(); ++i) ps[i].sub_(gs[i], learning_rate_);
    } else {
      if (velocity_.empty()) {
        for (const Tensor& p : ps) velocity_.push_back(zeros_like(p));
      }
      STRATA_CHECK(velocity_.size() == ps.size(), "dp::DpSgd::step", "the momentum buffers hold ",
                   velocity_.size(), " leaves but the parameters ", ps.size());
      for (size_t i = 0; i < ps.size(); ++i) {
        const Tensor& v = velocity_[i];
        v.mul_(full({}, options_.momentum, v.dtype(), v.device())).add_(gs[i]);
        ps[i].sub_(v, learning_rate_);
      }
    }
    ++steps_;
    return static_cast<int64_t>(rows.size());
  }

  int64_t steps_taken() const { return steps_; }
  // Resuming from a checkpoint: the sampler and the noise follow from the step,
  // the momentum from its buffers (one per parameter leaf, in tree order; empty
  // before the first step or without momentum).
  void set_steps_taken(int64_t steps) { steps_ = steps; }
  const std::vector<Tensor>& momentum_buffers() const { return velocity_; }
  void set_momentum_buffers(std::vector<Tensor> buffers) { velocity_ = std::move(buffers); }

  // epsilon of the steps so far at this delta (the RDP accountant).
  double epsilon(double delta) const {
    return dp::epsilon(sampler_.sample_rate(), options_.noise_multiplier, steps_, delta);
  }

  const Group& group() const { return group_; }
  const PoissonSampler& sampler() const { return sampler_; }
  const DpSgdOptions& options() const { return options_; }

 private:
  Group group_;
  PoissonSampler sampler_;
  DpSgdOptions options_;
  double learning_rate_;
  Shard shard_;
  int64_t steps_ = 0;
  std::vector<Tensor> velocity_;
};

}  // namespace strata::dp
