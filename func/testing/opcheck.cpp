#include "func/testing/opcheck.h"

#include <cmath>
#include <sstream>

#include "dispatcher/op_def.h"
#include "func/grad/gradcheck.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "transforms/vmap/batching.h"

namespace strata::testing {
namespace {

std::vector<Tensor> flatten_outputs(const Stack& stack) {
  std::vector<Tensor> out;
  for (const IValue& v : stack) {
    if (v.is_tensor()) out.push_back(v.to_tensor());
    if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) out.push_back(t);
    }
  }
  return out;
}

std::vector<Tensor> run(const OperatorHandle& op, const Stack& args) {
  Stack stack = args;
  op.call_boxed(stack);
  return flatten_outputs(stack);
}

// Where two lists of outputs differ, or "".
std::string compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double atol,
                    double rtol) {
  std::ostringstream out;
  if (got.size() != want.size()) {
    out << got.size() << " outputs, expected " << want.size();
    return out.str();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].sizes() != want[i].sizes() || got[i].dtype() != want[i].dtype()) {
      out << "output " << i << " is " << shape_string(got[i].sizes()) << " " << to_string(got[i].dtype())
          << ", expected " << shape_string(want[i].sizes()) << " " << to_string(want[i].dtype());
      return out.str();
    }
    const std::vector<double> a = got[i].to_vector<double>();
    const std::vector<double> b = want[i].to_vector<double>();
    for (size_t k = 0; k < a.size(); ++k) {
      const bool both_nan = std::isnan(a[k]) && std::isnan(b[k]);
      if (!both_nan && !(std::abs(a[k] - b[k]) <= atol + rtol * std::abs(b[k]))) {
        out << "output " << i << " element " << k << " is " << a[k] << ", expected " << b[k];
        return out.str();
      }
    }
  }
  return "";
}

// Positions of the floating-point tensor arguments: what grad, jvp and vmap act on.
std::vector<size_t> floating_args(const Stack& args) {
  std::vector<size_t> positions;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_tensor() && args[i].to_tensor().defined() &&
        is_floating_point(args[i].to_tensor().dtype()))
      positions.push_back(i);
  }
  return positions;
}

std::string check_schema(const OperatorHandle& op, const Stack& args) {
  const auto& schema_args = op.schema().arguments();
  std::vector<Tensor> before(args.size());
  std::vector<uint32_t> versions(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_tensor() || !args[i].to_tensor().defined()) continue;
    before[i] = args[i].to_tensor().clone();
    versions[i] = args[i].to_tensor().version();
  }
  Stack stack = args;
  op.call_boxed(stack);
  const std::vector<Tensor> outputs = flatten_outputs(stack);
  std::ostringstream out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!before[i].defined()) continue;
    const Tensor& t = args[i].to_tensor();
    const bool declared_write = schema_args[i].alias && schema_args[i].alias->is_write;
    if (declared_write) {
      const bool returned = !outputs.empty() && outputs[0].defined() &&
                            outputs[0].data_ptr() == t.data_ptr();
      if (!returned) out << "argument '" << schema_args[i].name << "' is declared mutable but is not returned; ";
      continue;
    }
    if (t.version() != versions[i] || !compare({t}, {before[i]}, 0.0, 0.0).empty()) {
      out << "the kernel wrote argument '" << schema_args[i].name
          << "', which the schema does not declare mutable (Tensor(a!)); ";
    }
  }
  if (const OpDef* def = find_op_def(op); def != nullptr && def->shape.has_value()) {
    const MetaList predicted = def->shape.value(args);
    MetaList actual;
    for (const Tensor& t : outputs) actual.push_back({DimVector(t.sizes()), t.dtype()});
    if (predicted != actual) out << "the shape function disagrees with the outputs; ";
    if (def->flops.has_value() && def->flops.value(args, actual) < 0) out << "negative FLOPs; ";
  }
  return out.str();
}

std::string check_vmap(const OperatorHandle& op, const Stack& args, int64_t batch) {
  const std::vector<size_t> positions = floating_args(args);
  if (positions.empty()) return "";
  // Batch b of argument p: the sample's value shifted by 0.1 b (distinct per sample).
  std::vector<Tensor> batched;
  for (size_t p : positions) {
    std::vector<Tensor> copies;
    for (int64_t b = 0; b < batch; ++b) copies.push_back(args[p].to_tensor() + 0.1 * static_cast<double>(b));
    batched.push_back(stack(copies, 0));
  }
  auto substitute = [&](const std::vector<Tensor>& values) {
    Stack s = args;
    for (size_t k = 0; k < positions.size(); ++k) s[positions[k]] = values[k];
    return s;
  };
  std::vector<Tensor> vmapped;
  batching::set_loop_fallback_enabled(false);
  try {
    vmapped = vmap([&](const std::vector<Tensor>& values) { return run(op, substitute(values)); })(batched);
  } catch (const Error& e) {
    batching::set_loop_fallback_enabled(true);
    return std::string("vmap failed: ") + e.what();
  }
  batching::set_loop_fallback_enabled(true);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> slice;
    for (const Tensor& t : batched) slice.push_back(t.select(0, b));
    std::vector<Tensor> got;
    for (const Tensor& t : vmapped) got.push_back(t.select(0, b));
    const std::string diff = compare(got, run(op, substitute(slice)), 1e-6, 1e-5);
    if (!diff.empty()) return "sample " + std::to_string(b) + " of the batch: " + diff;
  }
  return "";
}

}  // namespace

OpCheckResult opcheck(const OperatorHandle& op, const std::vector<OpCheckSample>& samples,
                      const OpCheckOptions& options) {
  OpCheckResult result;
  std::ostringstream failures;
  const std::string name = op.operator_name().to_string();
  auto fail = [&](const OpCheckSample& sample, const char* check, const std::string& what) {
    if (what.empty()) return;
    result.ok = false;
    failures << name << " [" << sample.description << "] " << check << ": " << what << "\n";
  };
  for (const OpCheckSample& sample : samples) {
    try {
      if (options.reference) {
        fail(sample, "forward", compare(run(op, sample.args), options.reference(sample.args),
                                        options.atol, options.rtol));
      }
      fail(sample, "schema", check_schema(op, sample.args));
      const std::vector<size_t> positions = floating_args(sample.args);
      std::vector<Tensor> inputs;
      for (size_t p : positions) inputs.push_back(sample.args[p].to_tensor().to(kFloat64));
      const TensorListFunction f = [&](const std::vector<Tensor>& xs) {
        Stack s = sample.args;
        for (size_t k = 0; k < positions.size(); ++k) s[positions[k]] = xs[k];
        return run(op, s);
      };
      if (options.grad && !inputs.empty()) {
        const GradcheckResult r = gradcheck(f, inputs);
        fail(sample, "gradcheck", r.ok ? "" : r.message);
      }
      if (options.jvp && !inputs.empty()) {
        const GradcheckResult r = jvpcheck(f, inputs);
        fail(sample, "jvpcheck", r.ok ? "" : r.message);
      }
      if (options.vmap) fail(sample, "vmap", check_vmap(op, sample.args, options.batch_size));
    } catch (const Error& e) {
      fail(sample, "call", e.what());
    }
  }
  result.message = failures.str();
  return result;
}

}  // namespace strata::testing
