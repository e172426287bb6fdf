#pragma once

// Pieces shared by the benchmark programs: a thread limit for one benchmark, and
// the peak memory of one call.
#include <malloc.h>
#include <strata/strata.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

namespace bench {

// Sets Strata's thread limit for one benchmark and restores the default after it.
class ThreadLimit {
 public:
  explicit ThreadLimit(int64_t threads) { strata::cpu::set_num_threads(static_cast<int>(threads)); }
  ~ThreadLimit() { strata::cpu::set_num_threads(0); }
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;
};

inline long status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = -1;
  while (status >> key) {
    if (key == field) {
      status >> value;
      break;
    }
    status.ignore(1 << 12, '\n');
  }
  return value;
}

// The resident memory one call of f adds at its peak, in MiB: the RSS high-water
// mark, reset through /proc/self/clear_refs, minus the RSS before the call, with
// Strata's allocator cache and malloc's free lists released first; nullopt where
// the kernel does not let the high-water mark be reset.
inline std::optional<double> peak_memory_mib(const std::function<void()>& f) {
  strata::release_cpu_allocator_cache();
  malloc_trim(0);
  const long before = status_kib("VmRSS:");
  if (!(std::ofstream("/proc/self/clear_refs") << "5")) return std::nullopt;
  f();
  return static_cast<double>(status_kib("VmHWM:") - before) / 1024.0;
}

}  // namespace bench
