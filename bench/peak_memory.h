#pragma once

// The resident memory one call adds at its peak: the RSS high-water mark, reset
// through /proc/self/clear_refs, minus the RSS before the call, with Strata's
// allocator cache and malloc's free lists released first. Shared by the
// benchmarks that report a peak_MiB counter.
#include <malloc.h>
#include <strata/strata.h>

#include <fstream>
#include <functional>
#include <optional>
#include <string>

namespace bench {

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

// Peak MiB of one call of f; nullopt where the kernel does not let the high-water
// mark be reset.
inline std::optional<double> peak_memory_mib(const std::function<void()>& f) {
  strata::release_cpu_allocator_cache();
  malloc_trim(0);
  const long before = status_kib("VmRSS:");
  if (!(std::ofstream("/proc/self/clear_refs") << "5")) return std::nullopt;
  f();
  return static_cast<double>(status_kib("VmHWM:") - before) / 1024.0;
}

}  // namespace bench
