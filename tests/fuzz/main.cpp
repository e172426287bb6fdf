// The differential fuzzer's driver (tests/fuzz/README.md):
//   differential_fuzzer [--seed N] [--programs N] [--seconds S] [--show-unsupported TEXT]
// Program k of a run uses seed N + k, so `--seed N+k --programs 1` replays it.
// --show-unsupported prints the seed and program of each unsupported case (a clear
// error of the transform where the reference ran) whose message contains TEXT.
// Every failure prints the check, the seed, the error and a shrunk C++ reproducer;
// the exit status is 1 when any check failed.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "tests/fuzz/check_support.h"

namespace strata::fuzz {
namespace {

// Drops instructions (each later reference to the dropped register reads the
// dropped instruction's first operand instead) while the check still fails.
Program shrink(Program p, const Check& check, uint64_t seed) {
  for (bool smaller = true; smaller;) {
    smaller = false;
    for (size_t i = 0; i < p.code.size() && p.code.size() > 1; ++i) {
      Program q = p;
      const int dropped = static_cast<int>(i) + 2;
      const int replacement = q.code[i].a;
      q.code.erase(q.code.begin() + static_cast<long>(i));
      for (size_t j = i; j < q.code.size(); ++j) {
        for (int* r : {&q.code[j].a, &q.code[j].b}) {
          if (*r == dropped)
            *r = replacement;
          else if (*r > dropped)
            --*r;
        }
      }
      std::mt19937_64 rng(seed);
      if (!check.run(q, rng).empty()) {
        p = q;
        smaller = true;
        break;
      }
    }
  }
  return p;
}

int main_impl(int argc, char** argv) {
  uint64_t seed = 1;
  long programs = 200;
  double seconds = 0;
  std::string show_unsupported;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seed"))
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--programs"))
      programs = std::strtol(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::strtod(argv[i + 1], nullptr);
    else if (!std::strcmp(argv[i], "--show-unsupported"))
      show_unsupported = argv[i + 1];
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::map<std::string, long> runs;
  std::map<std::string, double> check_seconds;  // time spent in each check, shrinking excluded
  std::map<std::string, long> unsupported;  // clear errors of a transform, by message start
  std::map<std::string, long> both_raised;  // checks that compared two errors, by message start
  std::set<OpKind> ops_seen;
  std::map<std::string, long> dtypes;  // programs by the dtype they compute in
  long failures = 0, done = 0;
  for (long k = 0; seconds > 0 ? elapsed() < seconds : k < programs; ++k, ++done) {
    const uint64_t program_seed = seed + static_cast<uint64_t>(k);
    std::mt19937_64 rng(program_seed);
    const Program p = random_program(rng);
    for (const Instruction& in : p.code) ops_seen.insert(in.kind);
    ++dtypes[to_string(p.dtype)];
    for (const Check& check : all_checks()) {
      const uint64_t check_seed = rng();
      std::mt19937_64 check_rng(check_seed);
      ++runs[check.name];
      const long raised = fuzz::both_raised().count;
      const double check_start = elapsed();
      const std::string failure = check.run(p, check_rng);
      check_seconds[check.name] += elapsed() - check_start;
      if (fuzz::both_raised().count != raised) {
        ++both_raised[fuzz::both_raised().last.substr(0, fuzz::both_raised().last.find(" ("))
                          .substr(0, 120)];
      }
      if (failure.empty()) continue;
      if (failure.rfind(kUnsupported, 0) == 0) {
        // The check and the error, up to its first detail (the stack's own
        // description is in the check's report, not here).
        std::string error = failure.substr(failure.find(": ", std::strlen(kUnsupported)) + 2);
        error = error.substr(0, error.find(" ("));
        ++unsupported[std::string(check.name) + ": " + error.substr(0, 120)];
        if (!show_unsupported.empty() && failure.find(show_unsupported) != std::string::npos) {
          std::cout << "unsupported " << check.name << " (program seed " << program_seed
                    << ")\n  " << failure << "\nprogram:\n" << to_cpp(p) << "\n";
        }
        continue;
      }
      ++failures;
      const Program small = shrink(p, check, check_seed);
      std::cout << "FAILED " << check.name << " (program seed " << program_seed << ")\n  "
                << failure << "\nreproducer:\n"
                << to_cpp(small) << "\n";
    }
  }
  const double secs = elapsed();
  std::cout << done << " programs, " << failures << " failures, " << secs << " s ("
            << (secs > 0 ? done / secs : 0) << " programs/s)\n";
  for (const auto& [name, n] : runs) {
    std::cout << "  " << n << " x " << name << " (" << check_seconds[name] << " s)\n";
  }
  for (const auto& [message, n] : unsupported) {
    std::cout << "  unsupported (a clear error, not a failure), " << n << " x " << message << "\n";
  }
  for (const auto& [message, n] : both_raised) {
    std::cout << "  both sides raised (agreed), " << n << " x " << message << "\n";
  }
  const NestedCoverage& nested = nested_coverage();
  std::cout << "  transform stacks: " << nested.stacks.size() << " distinct sequences of layer kinds; by depth";
  for (int d = 1; d <= 4; ++d) std::cout << " " << d << ": " << nested.by_depth[d];
  std::cout << "\n  programs by dtype:";
  for (const auto& [dtype, n] : dtypes) std::cout << " " << dtype << ": " << n << ",";
  std::cout << "\n  ops used:";
  for (OpKind kind : ops_seen) std::cout << " " << fuzz::name(kind) << ",";
  std::cout << "\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace strata::fuzz

int main(int argc, char** argv) { return strata::fuzz::main_impl(argc, argv); }
