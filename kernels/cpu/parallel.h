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
inline constexpr int64_t kElementwiseGrain = 32768;

}  // namespace strata::cpu
