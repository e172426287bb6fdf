// Checks 3 of ../shared/TESTING.md for every entry of the op table: vmap against
// a loop over the batch, for every combination of batched inputs with the batch
// dim first, last and in the middle, batch sizes 1, 2 and 3, out_dims 0 and -1,
// and one nested level; then vmap∘grad (per-sample gradients, which run the
// batching rules of the backward ops) against a loop of grad calls. An entry that
// claims a batching rule runs with the loop fallback switched off, which proves
// that every op it reaches has a rule.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/op_table/op_info.h"
#include "tests/test_support.h"

namespace strata::testing {
namespace {

using Inputs = std::vector<Tensor>;
using InDims = std::vector<std::optional<int64_t>>;

ScalarType vmap_dtype(const OpInfo& info) {
  for (ScalarType d : info.dtypes) {
    if (d == kFloat64) return d;
  }
  return info.dtypes.front();
}

// Switches the loop fallback off for the scope when the op claims a rule.
class FallbackSwitch {
 public:
  explicit FallbackSwitch(bool off) : was_(batching::loop_fallback_enabled()) {
    if (off) batching::set_loop_fallback_enabled(false);
  }
  ~FallbackSwitch() { batching::set_loop_fallback_enabled(was_); }
  FallbackSwitch(const FallbackSwitch&) = delete;
  FallbackSwitch& operator=(const FallbackSwitch&) = delete;

 private:
  bool was_;
};

// Sample b of a batched input: floating inputs are scaled so samples differ
// (staying in the op's domain); integer and boolean ones (indices, masks) repeat.
Tensor sample_variant(const Tensor& t, int64_t b) {
  if (!is_floating_point(t.dtype())) return t.clone();
  return t * (1.0 + 0.25 * static_cast<double>(b));
}

// vmap of `f` over a runtime number of arguments.
template <class F>
Inputs call_vmap(const F& f, const Inputs& x, const VmapOptions& options) {
  switch (x.size()) {
    case 1: return vmap([&](const Tensor& a) { return f({a}); }, options)(x[0]);
    case 2:
      return vmap([&](const Tensor& a, const Tensor& b) { return f({a, b}); }, options)(x[0], x[1]);
    case 3:
      return vmap(
          [&](const Tensor& a, const Tensor& b, const Tensor& c) {
            return f({a, b, c});
          },
          options)(x[0], x[1], x[2]);
    case 4:
      return vmap(
          [&](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d) {
            return f({a, b, c, d});
          },
          options)(x[0], x[1], x[2], x[3]);
    default: throw std::runtime_error("call_vmap: too many inputs");
  }
}

struct Case {
  InDims in_dims;
  int64_t batch_size;
  int64_t out_dim;
  std::string describe() const {
    std::ostringstream out;
    out << "in_dims [";
    for (size_t i = 0; i < in_dims.size(); ++i) {
      out << (i ? ", " : "");
      if (in_dims[i]) {
        out << *in_dims[i];
      } else {
        out << "none";
      }
    }
    out << "], batch size " << batch_size << ", out_dim " << out_dim;
    return out.str();
  }
};

std::vector<Case> cases_for(const Inputs& inputs) {
  const size_t n = inputs.size();
  std::vector<Case> cases;
  for (uint32_t subset = 1; subset < (1u << n); ++subset) {
    for (int position = 0; position < 3; ++position) {
      InDims dims(n);
      for (size_t i = 0; i < n; ++i) {
        if (!(subset & (1u << i))) continue;
        const int64_t rank = inputs[i].dim() + 1;
        dims[i] = position == 0 ? 0 : position == 1 ? -1 : rank / 2;
      }
      cases.push_back({dims, 3, 0});
    }
  }
  const InDims first(n, std::optional<int64_t>(0));
  cases.push_back({first, 1, 0});
  cases.push_back({first, 2, 0});
  cases.push_back({first, 3, -1});
  return cases;
}

std::optional<std::string> compare(const Inputs& actual, const Inputs& expected,
                                   const Tolerance& tol) {
  if (actual.size() != expected.size()) return "different number of outputs";
  for (size_t j = 0; j < actual.size(); ++j) {
    if (actual[j].dtype() != expected[j].dtype()) {
      return "output " + std::to_string(j) + " has dtype " + to_string(actual[j].dtype()) +
             ", expected " + to_string(expected[j].dtype());
    }
    ::testing::AssertionResult close =
        allclose(actual[j], expected[j], tol.atol + 1e-12, tol.rtol + 1e-12);
    if (!close) return "output " + std::to_string(j) + ": " + close.message();
  }
  return std::nullopt;
}

// vmap over one case against the loop that calls the op sample by sample.
std::optional<std::string> check_case(const OpInfo& info, const Sample& sample, const Case& c,
                                      const Tolerance& tol) {
  Inputs batched;
  for (size_t i = 0; i < sample.inputs.size(); ++i) {
    const Tensor& t = sample.inputs[i];
    if (!c.in_dims[i]) {
      batched.push_back(t);
      continue;
    }
    Inputs variants;
    for (int64_t b = 0; b < c.batch_size; ++b) variants.push_back(sample_variant(t, b));
    batched.push_back(stack(variants, *c.in_dims[i]));
  }
  std::vector<Inputs> per_sample;
  for (int64_t b = 0; b < c.batch_size; ++b) {
    Inputs x;
    for (size_t i = 0; i < batched.size(); ++i) {
      x.push_back(c.in_dims[i] ? batched[i].select(*c.in_dims[i], b) : batched[i]);
    }
    per_sample.push_back(info.op(x, sample.args));
  }
  Inputs expected;
  for (size_t j = 0; j < per_sample.front().size(); ++j) {
    Inputs outs;
    for (const Inputs& o : per_sample) outs.push_back(o[j]);
    expected.push_back(stack(outs, c.out_dim));
  }
  auto f = [&](const Inputs& x) { return info.op(x, sample.args); };
  const Inputs actual = call_vmap(f, batched, {.in_dims = c.in_dims, .out_dims = {c.out_dim}});
  return compare(actual, expected, tol);
}

// vmap(vmap(op)) with every input batched at dim 0 on both levels.
std::optional<std::string> check_nested(const OpInfo& info, const Sample& sample,
                                        const Tolerance& tol) {
  Inputs batched;
  for (const Tensor& t : sample.inputs) {
    Inputs outer;
    for (int64_t a = 0; a < 2; ++a) {
      Inputs inner;
      for (int64_t b = 0; b < 3; ++b) inner.push_back(sample_variant(t, 3 * a + b));
      outer.push_back(stack(inner, 0));
    }
    batched.push_back(stack(outer, 0));
  }
  Inputs expected;
  std::vector<Inputs> rows;
  for (int64_t a = 0; a < 2; ++a) {
    std::vector<Inputs> cols;
    for (int64_t b = 0; b < 3; ++b) {
      Inputs x;
      for (const Tensor& t : batched) x.push_back(t.select(0, a).select(0, b));
      cols.push_back(info.op(x, sample.args));
    }
    Inputs row;
    for (size_t j = 0; j < cols.front().size(); ++j) {
      Inputs outs;
      for (const Inputs& o : cols) outs.push_back(o[j]);
      row.push_back(stack(outs, 0));
    }
    rows.push_back(row);
  }
  for (size_t j = 0; j < rows.front().size(); ++j) {
    Inputs outs;
    for (const Inputs& r : rows) outs.push_back(r[j]);
    expected.push_back(stack(outs, 0));
  }
  auto op = [&](const Inputs& x) { return info.op(x, sample.args); };
  auto inner = [&](const Inputs& x) { return call_vmap(op, x, {}); };
  return compare(call_vmap(inner, batched, {}), expected, tol);
}

// An op without tensor inputs (a factory) called inside vmap gives what it
// gives outside: nothing of it is batched.
std::optional<std::string> check_factory(const OpInfo& info, const Sample& sample,
                                         const Tolerance& tol) {
  const Inputs expected = info.op({}, sample.args);
  auto f = [&](const Tensor&) { return info.op({}, sample.args); };
  const Inputs actual = vmap(f, {.out_dims = {none}})(zeros({2}));
  return compare(actual, expected, tol);
}

std::optional<std::string> run_vmap_check(const OpInfo& info, Check) {
  const ScalarType dtype = vmap_dtype(info);
  const Tolerance tol = info.tolerance(Check::Vmap, dtype);
  FallbackSwitch fallback(info.batching_rule);
  size_t checked = 0;
  for (const Sample& sample : info.samples(dtype)) {
    if (sample.inputs.empty()) {
      ++checked;
      try {
        if (auto failure = check_factory(info, sample, tol)) {
          return "sample '" + sample.description + "' (no tensor inputs): " + *failure;
        }
      } catch (const std::exception& e) {
        return "sample '" + sample.description + "' (no tensor inputs) threw: " + e.what();
      }
      continue;
    }
    if (sample.inputs.size() > 4) continue;
    ++checked;
    std::vector<Case> cases = cases_for(sample.inputs);
    for (const Case& c : cases) {
      try {
        if (auto failure = check_case(info, sample, c, tol)) {
          return "sample '" + sample.description + "', " + c.describe() + ": " + *failure;
        }
      } catch (const std::exception& e) {
        return "sample '" + sample.description + "', " + c.describe() + " threw: " + e.what();
      }
    }
    try {
      if (auto failure = check_nested(info, sample, tol)) {
        return "sample '" + sample.description + "', nested vmap: " + *failure;
      }
    } catch (const std::exception& e) {
      return "sample '" + sample.description + "', nested vmap threw: " + e.what();
    }
  }
  if (checked == 0) return "no sample has at most 4 tensor inputs";
  return std::nullopt;
}

// Per-sample gradients of sum(out_j * w_j) over the floating outputs, w.r.t. the
// floating inputs (batched at dim 0; the others are unbatched), against a loop.
std::optional<std::string> run_vmap_grad_check(const OpInfo& info, Check) {
  const Tolerance tol = info.tolerance(Check::VmapGrad, kFloat64);
  FallbackSwitch fallback(info.batching_rule);
  Generator gen(17);
  size_t checked = 0;
  for (const Sample& sample : info.samples(kFloat64)) {
    Inputs floating;
    Inputs others;
    std::vector<bool> is_floating;
    for (const Tensor& t : sample.inputs) {
      is_floating.push_back(is_floating_point(t.dtype()));
      (is_floating.back() ? floating : others).push_back(t);
    }
    if (floating.empty()) continue;
    auto merge = [&](const Inputs& f, const Inputs& o) {
      Inputs x;
      size_t fi = 0;
      size_t oi = 0;
      for (bool fl : is_floating) x.push_back(fl ? f[fi++] : o[oi++]);
      return x;
    };
    Inputs weights;
    for (const Tensor& out : info.op(sample.inputs, sample.args)) {
      weights.push_back(is_floating_point(out.dtype()) ? randn(out.sizes(), gen, kFloat64)
                                                       : Tensor());
    }
    auto loss = [&](const Inputs& f, const Inputs& o) {
      const Inputs outs = info.op(merge(f, o), sample.args);
      Tensor total = zeros({}, kFloat64);
      for (size_t j = 0; j < outs.size(); ++j) {
        if (weights[j].defined()) total = total + (outs[j].to(kFloat64) * weights[j]).sum();
      }
      return total;
    };
    constexpr int64_t kBatch = 3;
    Inputs batched;
    for (const Tensor& t : floating) {
      Inputs variants;
      for (int64_t b = 0; b < kBatch; ++b) variants.push_back(sample_variant(t, b));
      batched.push_back(stack(variants, 0));
    }
    ++checked;
    try {
      const Inputs actual = vmap(grad(loss), {.in_dims = {0, none}})(batched, others);
      for (size_t i = 0; i < floating.size(); ++i) {
        Inputs expected_rows;
        for (int64_t b = 0; b < kBatch; ++b) {
          Inputs x;
          for (const Tensor& t : batched) x.push_back(t.select(0, b));
          expected_rows.push_back(grad(loss)(x, others)[i]);
        }
        ::testing::AssertionResult close =
            allclose(actual[i], stack(expected_rows, 0), tol.atol + 1e-12, tol.rtol + 1e-12);
        if (!close) {
          return "sample '" + sample.description + "', gradient of input " + std::to_string(i) +
                 ": " + close.message();
        }
      }
    } catch (const std::exception& e) {
      return "sample '" + sample.description + "' threw: " + e.what();
    }
  }
  if (checked == 0) return "no sample has floating inputs";
  return std::nullopt;
}

}  // namespace

void register_vmap_tests() {
  for (const OpInfo& info : op_infos()) {
    std::vector<Check> checks = {Check::Vmap};
    if (info.differentiable) checks.push_back(Check::VmapGrad);
    for (Check check : checks) {
      register_check(check == Check::Vmap ? "OpVmap" : "OpVmapGrad", info, check,
                     check == Check::Vmap ? &run_vmap_check : &run_vmap_grad_check);
    }
  }
}

}  // namespace strata::testing
