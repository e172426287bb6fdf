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
// Handing half of a 64K-element pass (256 KB of float, a few microseconds of
// work) to a TBB worker costs more than it saves: hessian n = 256, whose passes
// are [256, 256], took 222-233 us at 2 threads against 157-185 at 1 with a grain
// of 32768, and 157-185 at both with this one (per-sample MLP and CNN unchanged).
inline constexpr int64_t kElementwiseGrain = 131072;

}  // namespace strata::cpu
