// jacrev against jacfwd for every entry of the op table with reverse and forward
// derivatives, in Float64 (where the entry has it) on every sample: the Jacobian of
// the op's floating outputs w.r.t. its floating inputs (integer and boolean inputs,
// indices and masks, are constants). The two run different machinery (vmap of the
// backward pass over output directions, vmap of jvp over input directions), so
// agreement checks the forward formulas, the backward ones and their batching rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/op_table/op_info.h"
#include "tests/test_support.h"

namespace strata::testing {
namespace {

using Inputs = std::vector<Tensor>;

// The op as a function of the sample's floating inputs only, returning its floating outputs.
struct FloatingPart {
  const OpInfo& info;
  const Sample& sample;

  Inputs operator()(const Inputs& floating) const {
    Inputs all = sample.inputs;
    size_t next = 0;
    for (Tensor& t : all) {
      if (is_floating_point(t.dtype())) t = floating[next++];
    }
    Inputs outputs;
    for (const Tensor& out : info.op(all, sample.args)) {
      if (is_floating_point(out.dtype())) outputs.push_back(out);
    }
    return outputs;
  }
};

// The least precise floating dtype among the tensors (a Float32 input of a mixed
// sample gives jacrev Float32 gradients, jacfwd Float64 tangents).
ScalarType least_precise(const Inputs& a, const Inputs& b) {
  for (const Inputs* tensors : {&a, &b}) {
    for (const Tensor& t : *tensors) {
      if (t.dtype() == kFloat32) return kFloat32;
    }
  }
  return kFloat64;
}

constexpr int64_t kMaxBasisSize = 1024;

int64_t numel(const Inputs& tensors) {
  int64_t n = 0;
  for (const Tensor& t : tensors) n += t.numel();
  return n;
}

std::optional<std::string> compare(const std::vector<Inputs>& rev, const std::vector<Inputs>& fwd,
                                   Tolerance tol) {
  if (rev.size() != fwd.size()) return "jacrev and jacfwd differ in their number of outputs";
  for (size_t o = 0; o < rev.size(); ++o) {
    for (size_t i = 0; i < rev[o].size(); ++i) {
      const ::testing::AssertionResult close = allclose(rev[o][i], fwd[o][i], tol.atol, tol.rtol);
      if (!close) {
        return "output " + std::to_string(o) + ", input " + std::to_string(i) +
               ": jacrev vs jacfwd: " + close.message();
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> run_jacobian_check(const OpInfo& info, Check check) {
  size_t checked = 0;
  for (const Sample& sample : info.samples(derivative_check_dtype(info))) {
    Inputs floating;
    for (const Tensor& t : sample.inputs) {
      if (is_floating_point(t.dtype())) floating.push_back(t);
    }
    const FloatingPart f{info, sample};
    // Without floating inputs or outputs there is nothing to differentiate; where
    // the op is not finite there is no derivative to compare.
    if (floating.empty() || !all_finite(floating)) continue;
    const Inputs outputs = f(floating);
    if (outputs.empty() || !all_finite(outputs)) continue;
    // A large sample (the reductions' [70000] one, for their parallel paths) is left
    // out: the basis jacrev and jacfwd push is [M, M] and [N, N]; the small ones
    // cover the same formulas.
    if (std::max(numel(outputs), numel(floating)) > kMaxBasisSize) continue;
    ++checked;
    const Tolerance tol = info.tolerance(check, least_precise(floating, outputs));
    try {
      const std::vector<Inputs> rev = jacrev(f)(floating);
      const std::vector<Inputs> fwd = jacfwd(f)(floating);
      if (auto failure = compare(rev, fwd, tol))
        return "sample '" + sample.description + "': " + *failure;
    } catch (const std::exception& e) {
      return "sample '" + sample.description + "' threw: " + e.what();
    }
  }
  if (checked == 0) return "no sample has finite floating inputs and outputs to differentiate";
  return std::nullopt;
}

}  // namespace

void register_jacobian_tests() {
  for (const OpInfo& info : op_infos()) {
    if (info.differentiable && info.forward_ad) {
      register_check("OpJacobian", info, Check::Jacobian, &run_jacobian_check);
    }
  }
}

}  // namespace strata::testing
