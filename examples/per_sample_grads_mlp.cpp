// Per-sample gradients of an MLP 784-128-10 (ReLU, cross-entropy): the loss is
// written for one sample, grad differentiates it w.r.t. a std::map of
// parameters, and vmap runs that for the whole batch at once. Checked against a
// loop of grad calls, one per sample; both are timed.
#include <strata/strata.h>

#include <cstdio>

#include "models.h"

namespace st = strata;
using models::Params;

int main() {
  const int64_t batch = 64;
  const Params params = models::mlp_params();
  const st::Tensor x = models::det({batch, 784}, 0.37);
  const st::Tensor y = models::peer_labels(batch);

  // The parameters are shared (in_dim none); x and y are split along dim 0.
  auto per_sample_grads =
      st::vmap(st::grad(models::mlp_sample_loss), {.in_dims = {st::none, 0, 0}});
  const Params vmapped = per_sample_grads(params, x, y);
  const Params looped = models::per_sample_loop(models::mlp_sample_loss, params, x, y);

  std::printf("per-sample gradients of an MLP 784-128-10, batch %lld\n",
              static_cast<long long>(batch));
  std::printf("  %-3s %-16s %s\n", "", "shape", "max |vmap(grad) - loop|");
  bool all_ok = true;
  for (const auto& [name, g] : vmapped) {
    const models::Agreement a = models::agreement(g, looped.at(name));
    all_ok = all_ok && a.ok;
    std::printf("  %-3s %-16s %.3g %s\n", name.c_str(), st::shape_string(g.sizes()).c_str(),
                a.max_abs_diff, a.ok ? "OK" : "MISMATCH");
  }
  std::printf("vmap(grad) against the loop: %s\n", all_ok ? "OK" : "MISMATCH");

  const double vmap_ms = models::best_ms([&] { per_sample_grads(params, x, y); });
  const double loop_ms =
      models::best_ms([&] { models::per_sample_loop(models::mlp_sample_loss, params, x, y); }, 3);
  std::printf("time per batch (best of runs): vmap(grad) %.3f ms, loop of grad %.3f ms (%.1fx)\n",
              vmap_ms, loop_ms, loop_ms / vmap_ms);
  return all_ok ? 0 : 1;
}
