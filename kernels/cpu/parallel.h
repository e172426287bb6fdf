#pragma once

#include <cstdint>
#include <functional>

namespace strata::cpu {

// Splits [begin, end) into chunks of at least `grain` items run on TBB's pool.
// Ranges smaller than `grain` run inline on the calling thread: small tensors pay
// nothing for parallelism.
void parallel_for_chunks(int64_t begin, int64_t end, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& body);

template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& body) {
  if (end - begin <= grain) {
    if (end > begin) body(begin, end);
    return;
  }
  parallel_for_chunks(begin, end, grain, std::forward<F>(body));
}

// Limits the worker threads of all Strata kernels (0 restores the default).
void set_num_threads(int threads);
int num_threads();

// Below this many elements an elementwise kernel stays on the calling thread.
// Whether a 64K-element pass (256 KB of float, a few microseconds of work) is
// worth splitting depends on the machine: it pays on some and costs on others.
// The workload that tells is hessian at n = 256, whose passes are [256, 256]
// (bench/nested_transforms.cpp); the per-sample MLP and CNN do not depend on it.
inline constexpr int64_t kElementwiseGrain = 32768;

}  // namespace strata::cpu
