#pragma once

#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/fuzz/program.h"

namespace strata::fuzz {

// One equivalence that must hold for every program; `failure` is empty when it
// held, else what differed.
struct Check {
  const char* name;  // the transform stack, e.g. "vmap(chunk_size) vs loop"
  std::string (*body)(const Program& p, std::mt19937_64& rng);
  // body, with p's dtype noted for compare(): a float32 program's gradient with
  // respect to float64 inputs is float64 but carries float32 rounding.
  std::string run(const Program& p, std::mt19937_64& rng) const;
};

// Every check: the first ones (checks.cpp), stack_checks() (stacks.cpp),
// nested_checks() (nested.cpp) and error_checks() (errors.cpp).
const std::vector<Check>& all_checks();
// Functionalize, trace + replay, cond, custom functions, float32, threads, TBB threads.
const std::vector<Check>& stack_checks();
// Random stacks of up to 4 transforms against a stack of reference transforms.
const std::vector<Check>& nested_checks();
// A bad program raises a strata::Error naming its failing op, eagerly and under
// a random stack of transforms.
const std::vector<Check>& error_checks();
// The stacks nested_checks() drew: each distinct sequence of layer kinds, outermost
// first ("jacrev > vmap > "), and how many stacks of each depth (0 to 4).
struct NestedCoverage {
  std::set<std::string> stacks;
  long by_depth[5] = {};
};
NestedCoverage& nested_coverage();
// The check called `name`; throws strata::Error for an unknown name.
const Check& find_check(const std::string& name);

// Bugs a test plants to show a check can fail (tests/fuzz/stacks_test.cpp); the
// library's own planted bugs are kernels a test registers over the real ones.
struct PlantedBugs {
  bool wrong_custom_vjp = false;  // the custom function's vjp rule scales x's gradient
};
PlantedBugs& planted_bugs();

// Prefixes the result of a check where the transform raised a strata::Error for
// an unsupported case that the reference ran.
inline constexpr const char* kUnsupported = "unsupported: ";

}  // namespace strata::fuzz
