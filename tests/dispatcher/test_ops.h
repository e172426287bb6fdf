#pragma once

// Test-only operators, registered and removed per test through Library objects.

#include <gtest/gtest.h>

#include <string>
#include <list>
#include <vector>

#include <strata/strata.h>

#include "tests/test_support.h"

namespace strata::testing {

// Which kernels ran, in order, on this thread.
inline std::vector<std::string>& kernel_log() {
  thread_local std::vector<std::string> log;
  return log;
}

// A Def library for namespace "test" and Impl libraries per key, all removed at
// the end of the test.
class TestLibraries {
 public:
  Library& defs() { return defs_; }
  Library& at(DispatchKey key) {
    libraries_.emplace_back(Library::Kind::Impl, "test", key, __FILE__, __LINE__);
    return libraries_.back();
  }
  Library& fallback_at(DispatchKey key) {
    libraries_.emplace_back(Library::Kind::Impl, "_", key, __FILE__, __LINE__);
    return libraries_.back();
  }

 private:
  Library defs_{Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__};
  std::list<Library> libraries_;  // stable addresses
};

// An unboxed kernel `Tensor(const Tensor&)` that logs `name` and returns its input.
template <const char* kName>
Tensor logging_kernel(const Tensor& x) {
  kernel_log().push_back(kName);
  return x;
}

inline Tensor call_unary(const char* name, const Tensor& x) {
  return Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Tensor(const Tensor&)>().call(x);
}


}  // namespace strata::testing
