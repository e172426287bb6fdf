// An ensemble of 8 MLPs (784-128-10) evaluated in one call: their parameters are
// stacked along a new dim 0 and vmap maps the model over them (in_dims 0 for the
// parameter tree, none for the input batch all models share). Checked against
// running the 8 models one by one.
#include <strata/strata.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "models.h"

namespace st = strata;
using models::Params;

int main() {
  const int64_t num_models = 8;
  const int64_t batch = 64;
  st::Generator gen(7);
  // Each model its own random initialisation, stacked leaf by leaf.
  std::vector<Params> members;
  for (int64_t m = 0; m < num_models; ++m) {
    members.push_back({{"w1", st::randn({128, 784}, gen) * (1.0 / 28.0)},
                       {"b1", st::randn({128}, gen) * 0.1},
                       {"w2", st::randn({10, 128}, gen) * (1.0 / 11.3)},
                       {"b2", st::randn({10}, gen) * 0.1}});
  }
  Params stacked;
  for (const auto& [name, unused] : members.front()) {
    std::vector<st::Tensor> leaves;
    for (const Params& p : members) leaves.push_back(p.at(name));
    stacked.emplace(name, st::stack(leaves, 0));
  }
  const st::Tensor x = models::det({batch, 784}, 0.37);

  auto ensemble = st::vmap(models::mlp, {.in_dims = {0, st::none}});
  const st::Tensor logits = ensemble(stacked, x);  // [8, 64, 10]
  std::vector<st::Tensor> one_by_one;
  for (const Params& p : members) one_by_one.push_back(models::mlp(p, x));
  const models::Agreement a = models::agreement(logits, st::stack(one_by_one, 0));

  std::printf("ensemble of %lld MLPs 784-128-10 on a batch of %lld: logits %s\n",
              static_cast<long long>(num_models), static_cast<long long>(batch),
              st::shape_string(logits.sizes()).c_str());
  // How often each model agrees with the ensemble's averaged vote.
  const st::Tensor vote = logits.softmax(2).mean({0}).argmax(1);
  const st::Tensor predictions = logits.argmax(2);
  for (int64_t m = 0; m < num_models; ++m) {
    const double agree =
        predictions.select(0, m).eq(vote).to(st::kFloat64).mean().item<double>() * 100.0;
    std::printf("  model %lld agrees with the ensemble on %.0f%% of the batch\n",
                static_cast<long long>(m), agree);
  }
  std::printf("max |vmap - one by one| = %.3g: %s\n", a.max_abs_diff, a.ok ? "OK" : "MISMATCH");

  const double vmap_ms = models::best_ms([&] { ensemble(stacked, x); });
  const double loop_ms = models::best_ms([&] {
    for (const Params& p : members) models::mlp(p, x);
  });
  std::printf("time: vmap %.3f ms, one by one %.3f ms\n", vmap_ms, loop_ms);
  return a.ok ? 0 : 1;
}
