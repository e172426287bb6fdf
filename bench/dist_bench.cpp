// Distributed benchmarks, run under mpirun (every rank runs every benchmark the
// same fixed number of iterations, so the collectives pair up; rank 0 reports):
//  - the all-reduce of the MLP's and the CNN's gradient trees (one bucketed
//    Group::all_reduce) against MPI_Allreduce of one buffer of the same bytes;
//  - a DP-SGD step (st::dp::private_gradient over the group: vmap(grad) and
//    clipping, or ghost clipping (the *_ghost rows), noise, all-reduce) against a non-private SGD step (grad of the
//    batch loss, all-reduced) on the same model and global batch, split over
//    the ranks.
//   mpirun -np 1 bench/dist_bench      # DP-SGD vs SGD, one process
//   mpirun -np 2 bench/dist_bench      # the all-reduce, and the scaling
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <strata/strata.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "models.h"

namespace st = strata;
using models::Params;

namespace {

st::dist::Group& world() {
  static st::dist::Group group = st::dist::init();
  return group;
}

Params zeros_like_tree(const Params& p) {
  return st::tree::map(p, [](const st::Tensor& t) { return st::zeros_like(t); });
}

int64_t bytes_of(const Params& p) {
  int64_t bytes = 0;
  for (const auto& [name, t] : p) bytes += t.numel() * 4;
  return bytes;
}

// The agreement on the call's signature alone (Note [Collective signatures]).
void SignatureOnly(benchmark::State& state) {
  const std::vector<st::Tensor> nothing;
  world().barrier();
  for (auto _ : state) world().all_reduce(nothing);
}
BENCHMARK(SignatureOnly)->Iterations(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The tree's gradients (zeros: the sums stay finite) through one Group::all_reduce
// with these options, and the same bytes as one buffer straight through
// MPI_Allreduce, both in each iteration, alternating which goes first so that
// load on the shared machine hits both alike. Counters: the median tree_us and
// mpi_us per call (medians: a call that lost its time slice to another process
// says nothing about either), and bandwidth_share = mpi_us / tree_us, the tree's
// bandwidth as a fraction of one-buffer MPI's.
void PairedTreeVsOneBuffer(benchmark::State& state, Params (*make)(),
                           st::dist::CollectiveOptions options) {
  st::dist::Group g = world();
  const st::dist::CollectiveOptions saved = g.options();
  g.set_options(options);
  const Params grads = zeros_like_tree(make());
  const int64_t bytes = bytes_of(grads);
  std::vector<float> buffer(static_cast<size_t>(bytes / 4), 0.0f);
  auto timed = [](auto&& f) {
    const double start = MPI_Wtime();
    f();
    return MPI_Wtime() - start;
  };
  auto tree = [&] { g.all_reduce(grads); };
  auto mpi = [&] {
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
  };
  std::vector<double> tree_s, mpi_s;
  int64_t i = 0;
  g.barrier();
  for (auto _ : state) {
    if (i++ % 2 == 0) {
      tree_s.push_back(timed(tree));
      mpi_s.push_back(timed(mpi));
    } else {
      mpi_s.push_back(timed(mpi));
      tree_s.push_back(timed(tree));
    }
  }
  g.set_options(saved);
  const double tree_median = median(tree_s), mpi_median = median(mpi_s);
  state.counters["tree_us"] = 1e6 * tree_median;
  state.counters["mpi_us"] = 1e6 * mpi_median;
  state.counters["bandwidth_share"] = mpi_median / tree_median;
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

const st::dist::CollectiveOptions kDefaults;
const st::dist::CollectiveOptions kUnverified{.verify = false};
const st::dist::CollectiveOptions kOneBucket{.bucket_bytes = size_t{1} << 30,
                                             .direct_bytes = size_t{1} << 30};
BENCHMARK_CAPTURE(PairedTreeVsOneBuffer, mlp, &models::mlp_params, kDefaults)
    ->Iterations(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(PairedTreeVsOneBuffer, mlp_unverified, &models::mlp_params, kUnverified)
    ->Iterations(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(PairedTreeVsOneBuffer, mlp_one_bucket, &models::mlp_params, kOneBucket)
    ->Iterations(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(PairedTreeVsOneBuffer, cnn, &models::cnn_params, kDefaults)
    ->Iterations(200)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(PairedTreeVsOneBuffer, cnn_unverified, &models::cnn_params, kUnverified)
    ->Iterations(200)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(PairedTreeVsOneBuffer, cnn_one_bucket, &models::cnn_params, kOneBucket)
    ->Iterations(200)->UseRealTime()->Unit(benchmark::kMicrosecond);

struct Workload {
  Params params;
  st::Tensor x, y;  // this rank's shard of the global batch
  int64_t global_batch;
};

// The global batch (the peer scripts' inputs), this rank's contiguous part of it.
Workload mlp_workload(int64_t batch) {
  const st::dp::Shard s = st::dp::shard(batch, world().rank(), world().size());
  return {models::mlp_params(), models::det({batch, 784}, 0.37).narrow(0, s.begin, s.size()),
          models::peer_labels(batch).narrow(0, s.begin, s.size()), batch};
}

Workload cnn_workload(int64_t batch) {
  const st::dp::Shard s = st::dp::shard(batch, world().rank(), world().size());
  return {models::cnn_params(),
          models::det({batch, 1, 28, 28}, 0.37).narrow(0, s.begin, s.size()),
          models::peer_labels(batch).narrow(0, s.begin, s.size()), batch};
}

void sgd_update(const Params& params, const Params& grads, double lr) {
  for (const auto& [name, p] : params) p.sub_(grads.at(name), lr);
}

// Non-private SGD: the gradient of the local sum of losses, all-reduced, over B.
template <class BatchLogits>
void SgdStep(benchmark::State& state, Workload (*make)(int64_t), BatchLogits logits) {
  Workload w = make(state.range(0));
  auto local_sum_loss = [&](const Params& p, const st::Tensor& x, const st::Tensor& y) {
    return st::nn::cross_entropy(logits(p, x), y, st::nn::Reduction::Sum);
  };
  world().barrier();
  for (auto _ : state) {
    Params g = st::grad(local_sum_loss)(w.params, w.x, w.y);
    world().all_reduce(g);
    for (auto& [name, t] : g) t.div_(st::full({}, static_cast<double>(w.global_batch), t.dtype()));
    sgd_update(w.params, g, 0.01);
  }
}

// DP-SGD: per-sample gradients, clipped, summed, noised once, all-reduced, over B.
template <class SampleLoss>
void DpSgdStep(benchmark::State& state, Workload (*make)(int64_t), SampleLoss sample_loss) {
  Workload w = make(state.range(0));
  const st::dp::DpSgdOptions options{.noise_multiplier = 1.0, .max_grad_norm = 1.0,
                                     .noise_seed = 1, .physical_batch = state.range(1)};
  int64_t step = 0;
  world().barrier();
  for (auto _ : state) {
    const Params g = st::dp::private_gradient(world(), sample_loss, w.params, w.x, w.y, step++,
                                              static_cast<double>(w.global_batch), options);
    sgd_update(w.params, g, 0.01);
  }
}

BENCHMARK_CAPTURE(SgdStep, mlp, &mlp_workload, &models::mlp)
    ->Arg(256)->Iterations(30)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(DpSgdStep, mlp, &mlp_workload, &models::mlp_sample_loss)
    ->Args({256, 0})->Args({256, 256})->Iterations(30)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(DpSgdStep, mlp_ghost, &mlp_workload, st::dp::ghost(&models::mlp_ghost_loss))
    ->Args({256, 0})->Iterations(30)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SgdStep, cnn, &cnn_workload, &models::cnn)
    ->Arg(64)->Iterations(10)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(DpSgdStep, cnn, &cnn_workload, &models::cnn_sample_loss)
    ->Args({64, 0})->Args({64, 64})->Iterations(10)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(DpSgdStep, cnn_ghost, &cnn_workload, st::dp::ghost(&models::cnn_ghost_loss))
    ->Args({64, 0})->Iterations(10)->UseRealTime()->Unit(benchmark::kMillisecond);

// Ranks other than 0 run the benchmarks silently.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  world();
  benchmark::Initialize(&argc, argv);
  if (world().rank() == 0) {
    std::printf("ranks: %d\n", world().size());
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}
