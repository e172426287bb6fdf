#include "kernels/cpu/parallel.h"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <memory>
#include <mutex>

namespace strata::cpu {
namespace {
std::mutex g_control_mutex;
std::unique_ptr<tbb::global_control> g_thread_limit;
}  // namespace

void parallel_for_chunks(int64_t begin, int64_t end, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& body) {
  // With one thread allowed TBB would still split the range into tasks and run
  // them one by one: a few microseconds per call for nothing.
  if (num_threads() == 1) {
    body(begin, end);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(begin, end, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { body(r.begin(), r.end()); });
}

void set_num_threads(int threads) {
  std::lock_guard<std::mutex> lock(g_control_mutex);
  g_thread_limit.reset();
  if (threads > 0) {
    g_thread_limit = std::make_unique<tbb::global_control>(
        tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
  }
}

int num_threads() {
  return static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
}

}  // namespace strata::cpu
