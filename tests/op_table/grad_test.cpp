// Checks 2 of ../shared/TESTING.md for every differentiable entry of the op
// table: reverse mode (gradcheck) and forward mode (jvpcheck) against finite
// differences in Float64 on every sample, broadcasting and non-contiguous ones
// included, and the second order for twice-differentiable ops: reverse over
// reverse (gradgradcheck) and forward over reverse (jvpgradcheck, what hessian runs). An expected
// failure must still fail: a check that starts passing makes its test fail until the entry is
// fixed.
#include <gtest/gtest.h>

#include "tests/op_table/op_info.h"

namespace strata::testing {
namespace {

GradcheckOptions options_for(const OpInfo& info, Check check) {
  GradcheckOptions options;
  auto it = info.tolerances.find({check, kFloat64});
  if (it != info.tolerances.end()) {
    options.atol = it->second.atol;
    options.rtol = it->second.rtol;
  }
  return options;
}

bool finite_everywhere(const TensorListFunction& f, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> x;
  for (const Tensor& t : inputs) x.push_back(is_floating_point(t.dtype()) ? t.to(kFloat64) : t);
  return all_finite(f(x));
}

auto check_of(Check check) {
  switch (check) {
    case Check::GradGrad: return &gradgradcheck;
    case Check::Jvp: return &jvpcheck;
    case Check::JvpGrad: return &jvpgradcheck;
    default: return &gradcheck;
  }
}

// Runs the check on every sample; returns the first failure, if any.
std::optional<std::string> run_check(const OpInfo& info, Check check) {
  const GradcheckOptions options = options_for(info, check);
  size_t checked = 0;
  for (const Sample& sample : info.samples(derivative_check_dtype(info))) {
    TensorListFunction f = [&](const std::vector<Tensor>& inputs) {
      return info.op(inputs, sample.args);
    };
    if (!finite_everywhere(f, sample.inputs)) continue;  // not differentiable there
    ++checked;
    try {
      GradcheckResult result = check_of(check)(f, sample.inputs, options);
      if (!result) return "sample '" + sample.description + "': " + result.message;
    } catch (const std::exception& e) {
      return "sample '" + sample.description + "' threw: " + e.what();
    }
  }
  if (checked == 0) return "no sample has finite outputs to differentiate";
  return std::nullopt;
}

}  // namespace

void register_grad_tests() {
  for (const OpInfo& info : op_infos()) {
    if (!info.differentiable) continue;
    std::vector<std::pair<Check, const char*>> checks = {{Check::Grad, "OpGrad"}};
    if (info.twice_differentiable) checks.emplace_back(Check::GradGrad, "OpGradGrad");
    if (info.forward_ad) {
      checks.emplace_back(Check::Jvp, "OpJvp");
      if (info.twice_differentiable) checks.emplace_back(Check::JvpGrad, "OpJvpGrad");
    }
    for (const auto& [check, suite] : checks) register_check(suite, info, check, &run_check);
  }
}

}  // namespace strata::testing
