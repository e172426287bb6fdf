#pragma once

#include <random>
#include <string>
#include <vector>

#include "tests/fuzz/program.h"

namespace strata::fuzz {

// One equivalence that must hold for every program; `failure` is empty when it
// held, else what differed.
struct Check {
  const char* name;  // the transform stack, e.g. "vmap(chunk_size) vs loop"
  std::string (*run)(const Program& p, std::mt19937_64& rng);
};

const std::vector<Check>& all_checks();

// Prefixes the result of a check where the transform raised a strata::Error for
// an unsupported case that the reference ran.
inline constexpr const char* kUnsupported = "unsupported: ";

}  // namespace strata::fuzz
