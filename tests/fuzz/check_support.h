#pragma once

// What the differential fuzzer's checks share: random inputs, the comparison of
// two results and the rule that both sides run or both raise a strata::Error.

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/fuzz/checks.h"

namespace strata::fuzz {

inline constexpr int64_t kBatch = 3;

// Normal values of `shape`, float64 unless told.
Tensor random_tensor(std::mt19937_64& rng, const std::vector<int64_t>& shape,
                     ScalarType dtype = kFloat64);
// Whether the program computes in float32 or float64: the checks of derivatives
// skip the others.
inline bool floating(const Program& p) { return is_floating_point(p.dtype); }
// The dtype of the program the current check runs (Check::run), for compare().
ScalarType& checked_dtype();
// The program computing in float64, noted as the checked dtype: a float32
// program's finite-difference checks run on it (float32 cannot resolve a step of 1e-6).
inline Program in_float64(Program p) {
  p.dtype = checked_dtype() = kFloat64;
  return p;
}
// {kBatch, shape...}
std::vector<int64_t> with_batch(const std::vector<int64_t>& shape);

// Central differences in float64: the step, and the tolerance (relative to the
// reference's size) of a derivative against them.
inline constexpr double kFiniteDifferenceStep = 1e-6;
inline constexpr double kFiniteDifferenceTol = 1e-5;
// Two float32 computations of one value that round differently (batched vs per-sample
// sums): float32's epsilon is 1.2e-7, and a program rounds a few dozen times.
inline constexpr double kFloat32Tol = 1e-5;
// The gradient of a scalar function of x by central differences, x's shape.
Tensor finite_difference_gradient(const std::function<double(const Tensor&)>& f, const Tensor& x);

// Empty when a and b have one shape and agree to within tol (relative to b's
// size); tol 0 asks for bitwise equality (NaN equal to NaN in the same place).
// tol is for float64: a float32 result, or any in a check of a float32 program,
// gets at least kFloat32Tol.
std::string compare(const char* what, const Tensor& a, const Tensor& b, double tol);

struct BothRaised {
  long count = 0;
  std::string last;
};
// This thread's count of checks where both sides raised.
BothRaised& both_raised();

// Runs f; an error (strata::Error) is returned as nullopt with its message.
template <class F>
std::optional<Tensor> attempt(F&& f, std::string& error) {
  try {
    return f();
  } catch (const Error& e) {
    error = e.what();
    return std::nullopt;
  }
}

// Both ran, or both raised a strata::Error (counted in both_raised(), with the
// last message, so the driver can say how often a check compared nothing).
template <class F, class G>
std::string agree(const char* what, F&& transformed, G&& reference, double tol) {
  std::string e1, e2;
  const std::optional<Tensor> a = attempt(transformed, e1);
  const std::optional<Tensor> b = attempt(reference, e2);
  if (!a && !b) {
    ++both_raised().count;
    both_raised().last = e2;
    return {};
  }
  // A transform may raise a clear error for what it does not support (writing a
  // batched value into an unbatched tensor, an in-place op on a view under grad):
  // counted and listed by the driver, not a failure.
  if (!a) return std::string(kUnsupported) + std::string(what) + ": " + e1;
  if (!b) return std::string(what) + ": the reference raised but the transform ran: " + e2;
  return compare(what, *a, *b, tol);
}

}  // namespace strata::fuzz
