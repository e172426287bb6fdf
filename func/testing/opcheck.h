#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "tensor/tensor.h"

namespace strata::testing {

// One call of the operator under test: a value per schema argument.
struct OpCheckSample {
  std::string description;
  Stack args;
};

// The outputs the op must give for a sample's arguments (the user's reference).
using OpReference = std::function<std::vector<Tensor>(const Stack& args)>;

struct OpCheckOptions {
  OpReference reference = {};
  double atol = 1e-6;
  double rtol = 1e-5;
  bool grad = true;  // gradcheck in Float64
  bool jvp = true;   // jvpcheck in Float64
  bool vmap = true;  // vmap against a loop, the loop fallback off
  int64_t batch_size = 3;
};

struct OpCheckResult {
  bool ok = true;
  std::string message;  // one line per failed check: sample, check, what differed
  explicit operator bool() const { return ok; }
};

// Checks a user's operator the way the op table checks Strata's own, on each
// sample: the forward against `reference`; the schema against what the kernel
// does (arguments not declared mutable keep their values and versions; an
// in-place op returns its target); the row's shape function and FLOP formula,
// if the op has a row; reverse and forward mode against finite differences in
// Float64 (floating tensor arguments are differentiated); and the vmap rule
// against a loop over the batch, with the loop fallback off (so an op without a
// batching rule fails). Tracing a replay is not checked: trace is not in this
// tree yet.
OpCheckResult opcheck(const OperatorHandle& op, const std::vector<OpCheckSample>& samples,
                      const OpCheckOptions& options = {});

}  // namespace strata::testing
