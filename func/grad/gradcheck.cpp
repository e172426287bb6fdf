#include "func/grad/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include "func/grad/grad_call.h"
#include "func/jvp/jvp_call.h"
#include "ops/creation.h"
#include "tensor/error.h"
#include "tensor/generator.h"

namespace strata::testing {

namespace {

constexpr double kFloat32Eps = 1e-3;

bool differentiable(const Tensor& t) { return t.defined() && is_floating_point(t.dtype()); }

std::vector<Tensor> to_float64(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) out.push_back(differentiable(t) ? t.to(kFloat64) : t);
  return out;
}

// Floating outputs of f, flattened to Float64 values.
std::vector<Tensor> floating_outputs(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> kept;
  for (const Tensor& t : outputs) {
    if (differentiable(t)) kept.push_back(t);
  }
  return kept;
}

std::vector<double> flat_values(const std::vector<Tensor>& tensors) {
  std::vector<double> values;
  for (const Tensor& t : tensors) {
    std::vector<double> v = t.to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

// J^T u for cotangents u (one per floating output), one gradient per
// differentiable input (in input order).
std::vector<Tensor> vjp_of(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& cotangents) {
  autograd::GradCall call("gradcheck");
  std::vector<Tensor> wrapped;
  for (size_t i = 0; i < inputs.size(); ++i) {
    wrapped.push_back(inputs[i].defined() ? call.enter(inputs[i], differentiable(inputs[i]), i)
                                          : inputs[i]);
  }
  std::vector<Tensor> outputs = floating_outputs(f(wrapped));
  call.end();
  return call.backward(outputs, cotangents);
}

// J v for tangents v (one per differentiable input, in input order), one tangent
// per floating output.
std::vector<Tensor> jvp_of(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& tangents) {
  forward::JvpCall call("jvpcheck");
  std::vector<Tensor> wrapped;
  size_t next = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    wrapped.push_back(differentiable(inputs[i]) ? call.enter(inputs[i], tangents[next++], i)
                                                : inputs[i]);
  }
  std::vector<Tensor> outputs = floating_outputs(f(wrapped));
  call.end();
  for (Tensor& out : outputs) out = call.tangent(out);
  return outputs;
}

// Values of the floating outputs with input `index`'s element `element` moved by delta.
std::vector<double> perturbed(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                              size_t index, const Tensor& direction, double delta) {
  std::vector<Tensor> moved = inputs;
  moved[index] = inputs[index].add(direction, delta);
  return flat_values(floating_outputs(f(moved)));
}

std::string describe_mismatch(const char* what, size_t input, int64_t in_element,
                              int64_t out_element, double analytic, double numeric) {
  std::ostringstream out;
  out << what << ": d output[" << out_element << "] / d input " << input << "[" << in_element
      << "]: analytic " << analytic << ", numerical " << numeric;
  return out.str();
}

bool close(double a, double n, const GradcheckOptions& o) {
  return std::abs(a - n) <= o.atol + o.rtol * std::abs(n);
}

GradcheckResult full_jacobian_check(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                                    const std::vector<Tensor>& outputs, const GradcheckOptions& o) {
  // Analytic rows: one vjp per output element.
  std::vector<std::vector<double>> rows;  // [out element][flattened differentiable inputs]
  for (size_t k = 0; k < outputs.size(); ++k) {
    for (int64_t e = 0; e < outputs[k].numel(); ++e) {
      std::vector<Tensor> cotangents;
      for (size_t j = 0; j < outputs.size(); ++j) cotangents.push_back(zeros_like(outputs[j]));
      Tensor flat = cotangents[k].view({outputs[k].numel()});
      flat.narrow(0, e, 1).fill_(1.0);
      rows.push_back(flat_values(vjp_of(f, inputs, cotangents)));
    }
  }
  size_t column = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiable(inputs[i])) continue;
    for (int64_t e = 0; e < inputs[i].numel(); ++e, ++column) {
      Tensor direction = zeros_like(inputs[i]);
      direction.view({inputs[i].numel()}).narrow(0, e, 1).fill_(1.0);
      std::vector<double> plus = perturbed(f, inputs, i, direction, o.eps);
      std::vector<double> minus = perturbed(f, inputs, i, direction, -o.eps);
      for (size_t r = 0; r < rows.size(); ++r) {
        const double numeric = (plus[r] - minus[r]) / (2 * o.eps);
        if (!close(rows[r][column], numeric, o)) {
          return {false, describe_mismatch("Jacobian", i, e, static_cast<int64_t>(r),
                                           rows[r][column], numeric)};
        }
      }
    }
  }
  return {};
}

GradcheckResult random_direction_check(const TensorListFunction& f,
                                       const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& outputs,
                                       const GradcheckOptions& o) {
  Generator gen(o.seed);
  for (int trial = 0; trial < o.random_directions; ++trial) {
    std::vector<Tensor> u;
    for (const Tensor& out : outputs) u.push_back(randn(out.sizes(), gen, kFloat64));
    std::vector<Tensor> jt_u = vjp_of(f, inputs, u);
    // <J^T u, v> against d/dt <u, f(x + t v)>.
    double analytic = 0;
    double numeric = 0;
    size_t g = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!differentiable(inputs[i])) continue;
      Tensor v = randn(inputs[i].sizes(), gen, kFloat64);
      analytic += jt_u[g++].mul(v).sum().item<double>();
      std::vector<double> plus = perturbed(f, inputs, i, v, o.eps);
      std::vector<double> minus = perturbed(f, inputs, i, v, -o.eps);
      std::vector<double> uv = flat_values(u);
      for (size_t r = 0; r < uv.size(); ++r) numeric += uv[r] * (plus[r] - minus[r]) / (2 * o.eps);
    }
    if (!close(analytic, numeric, o)) {
      std::ostringstream out;
      out << "random direction " << trial << ": <J^T u, v> = " << analytic
          << ", numerical <u, J v> = " << numeric;
      return {false, out.str()};
    }
  }
  return {};
}

// Forward mode: each column J e_k from one jvp, against central differences
// along e_k; above max_jacobian_entries, random directions v (all inputs at once).
GradcheckResult forward_check(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                              bool full, const GradcheckOptions& o) {
  Generator gen(o.seed + 2);
  std::vector<size_t> moved;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (differentiable(inputs[i])) moved.push_back(i);
  }
  auto check_direction = [&](const std::vector<Tensor>& v, const std::string& what) {
    std::vector<Tensor> plus_inputs = inputs, minus_inputs = inputs;
    for (size_t k = 0; k < moved.size(); ++k) {
      plus_inputs[moved[k]] = inputs[moved[k]].add(v[k], o.eps);
      minus_inputs[moved[k]] = inputs[moved[k]].add(v[k], -o.eps);
    }
    const std::vector<double> plus = flat_values(floating_outputs(f(plus_inputs)));
    const std::vector<double> minus = flat_values(floating_outputs(f(minus_inputs)));
    const std::vector<double> analytic = flat_values(jvp_of(f, inputs, v));
    for (size_t r = 0; r < analytic.size(); ++r) {
      const double numeric = (plus[r] - minus[r]) / (2 * o.eps);
      if (!close(analytic[r], numeric, o)) {
        std::ostringstream out;
        out << what << ": (J v)[" << r << "] forward mode " << analytic[r] << ", numerical "
            << numeric;
        return GradcheckResult{false, out.str()};
      }
    }
    return GradcheckResult{};
  };
  if (!full) {
    for (int trial = 0; trial < o.random_directions; ++trial) {
      std::vector<Tensor> v;
      for (size_t i : moved) v.push_back(randn(inputs[i].sizes(), gen, kFloat64));
      GradcheckResult r = check_direction(v, "random direction " + std::to_string(trial));
      if (!r) return r;
    }
    return {};
  }
  for (size_t k = 0; k < moved.size(); ++k) {
    for (int64_t e = 0; e < inputs[moved[k]].numel(); ++e) {
      std::vector<Tensor> v;
      for (size_t i : moved) v.push_back(zeros_like(inputs[i]));
      v[k].view({v[k].numel()}).narrow(0, e, 1).fill_(1.0);
      std::ostringstream what;
      what << "column of input " << moved[k] << "[" << e << "]";
      GradcheckResult r = check_direction(v, what.str());
      if (!r) return r;
    }
  }
  return {};
}

// The inputs in Float64, the step their outputs' precision can resolve, and
// whether the full Jacobian is small enough to check entry by entry; nullopt
// when there is nothing to differentiate.
struct CheckSetup {
  std::vector<Tensor> x;
  std::vector<Tensor> outputs;
  GradcheckOptions options;
  bool full = true;
};

std::optional<CheckSetup> setup_check(const TensorListFunction& f,
                                      const std::vector<Tensor>& inputs,
                                      const GradcheckOptions& options) {
  CheckSetup s{to_float64(inputs), {}, options, true};
  s.outputs = floating_outputs(f(s.x));
  int64_t in_elements = 0;
  int64_t out_elements = 0;
  for (const Tensor& t : s.x) in_elements += differentiable(t) ? t.numel() : 0;
  for (const Tensor& t : s.outputs) out_elements += t.numel();
  if (in_elements == 0 || out_elements == 0) return std::nullopt;
  // A Float32 output moves in rounding steps of ~1e-7 relative: over a 1e-6 step the
  // difference quotient would be off by ~10 %. Such outputs get a step their
  // precision can resolve.
  for (const Tensor& t : s.outputs) {
    if (t.dtype() != kFloat64) s.options.eps = std::max(s.options.eps, kFloat32Eps);
  }
  s.full = in_elements * out_elements <= s.options.max_jacobian_entries;
  return s;
}

}  // namespace

GradcheckResult gradcheck(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  const std::optional<CheckSetup> s = setup_check(f, inputs, options);
  if (!s) return {};
  return s->full ? full_jacobian_check(f, s->x, s->outputs, s->options)
                 : random_direction_check(f, s->x, s->outputs, s->options);
}

GradcheckResult jvpcheck(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                         const GradcheckOptions& options) {
  const std::optional<CheckSetup> s = setup_check(f, inputs, options);
  if (!s) return {};
  return forward_check(f, s->x, s->full, s->options);
}

namespace {

// `check` applied to x, u -> J(x)^T u: the backward pass as a function of the
// primals and the cotangents.
GradcheckResult check_backward(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                               const GradcheckOptions& options,
                               GradcheckResult (*check)(const TensorListFunction&,
                                                        const std::vector<Tensor>&,
                                                        const GradcheckOptions&)) {
  const std::vector<Tensor> x = to_float64(inputs);
  const std::vector<Tensor> outputs = floating_outputs(f(x));
  Generator gen(options.seed + 1);
  std::vector<Tensor> extended = x;
  for (const Tensor& out : outputs) extended.push_back(randn(out.sizes(), gen, kFloat64));
  const size_t n = x.size();
  TensorListFunction backward = [&f, n](const std::vector<Tensor>& args) {
    std::vector<Tensor> primals(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<Tensor> cotangents(args.begin() + static_cast<std::ptrdiff_t>(n), args.end());
    return vjp_of(f, primals, cotangents);
  };
  return check(backward, extended, options);
}

}  // namespace

GradcheckResult gradgradcheck(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options) {
  return check_backward(f, inputs, options, &gradcheck);
}

GradcheckResult jvpgradcheck(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                             const GradcheckOptions& options) {
  return check_backward(f, inputs, options, &jvpcheck);
}

}  // namespace strata::testing
