#pragma once

// Included by each libFuzzer target once. A fuzzed shape may ask for any size: an
// allocation over 1 GiB fails (Strata then throws its out-of-memory strata::Error)
// instead of aborting the sanitizer's allocator or exhausting the machine.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024";
}
