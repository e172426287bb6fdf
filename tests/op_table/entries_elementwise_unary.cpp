// Op-table entries: elementwise unary ops, clamp, pow with a Scalar exponent, fill_
// and the copies (clone, to, contiguous).
#include <cmath>
#include <numbers>
#include <sstream>
#include <string_view>

#include "tests/op_table/elementwise_entries.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using UnaryFn = std::function<Tensor(const Tensor&)>;

// The output dtype of a unary op, from its input's.
enum class Result { SameDtype, Floating, Bool };

ScalarType result_dtype(Result result, ScalarType in) {
  switch (result) {
    case Result::SameDtype: return in;
    case Result::Floating: return in == kFloat64 ? kFloat64 : kFloat32;
    case Result::Bool: return kBool;
  }
  return in;
}

OpInfo unary_entry(std::string name, UnaryFn op, std::function<double(double)> f,
                   std::vector<ScalarType> dtypes, Result result, double low = -2.0,
                   double high = 2.0) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = [low, high](ScalarType dtype) { return unary_samples(dtype, low, high); };
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(in[0])};
  };
  info.reference = [f, result](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{map_unary(in[0], result_dtype(result, in[0].dtype()), f)};
  };
  // A Bool result (logical_not) has nothing to differentiate.
  if (!is_floating_point(result_dtype(result, kFloat64))) return without_gradient(std::move(info));
  return info;
}

// The same op applied in place to a copy of the input (keeping its layout).
OpInfo in_place_entry(OpInfo info, std::string name, std::function<void(const Tensor&)> in_place) {
  info.name = std::move(name);
  info.inplace_variant.clear();
  auto samples = info.samples;
  info.samples = [samples](ScalarType dtype) { return in_place_samples(samples(dtype)); };
  info.op = [in_place](const std::vector<Tensor>& in, const Stack&) {
    Tensor self = copy_keeping_layout(in[0]);
    in_place(self);
    return std::vector<Tensor>{self};
  };
  return info;
}

Tensor gelu(const Tensor& x, std::string_view approximate) {
  static const auto op = Dispatcher::singleton()
                             .findSchemaOrThrow("strata::gelu", "")
                             .typed<Tensor(const Tensor&, std::string_view)>();
  return op.call(x, approximate);
}

double sign_of(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

// Lower bound first, then upper: with min > max every element becomes max.
double clamp_value(double x, std::optional<double> min, std::optional<double> max) {
  if (min && x < *min) x = *min;
  if (max && x > *max) x = *max;
  return x;
}

OpInfo clamp_entry(std::string name, std::optional<Scalar> min, std::optional<Scalar> max) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = numeric_dtypes();
  info.samples = [](ScalarType dtype) { return unary_samples(dtype); };
  info.op = [min, max](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{clamp(in[0], min, max)};
  };
  info.reference = [min, max](const std::vector<Tensor>& in, const Stack&) {
    std::vector<Tensor> operands{in[0]};
    if (min) operands.push_back(wrapped_scalar_tensor(*min));
    if (max) operands.push_back(wrapped_scalar_tensor(*max));
    const std::optional<double> lo = min ? std::optional(min->to_double()) : std::nullopt;
    const std::optional<double> hi = max ? std::optional(max->to_double()) : std::nullopt;
    return std::vector<Tensor>{map_unary(in[0], reference_result_type(operands),
                                         [&](double x) { return clamp_value(x, lo, hi); })};
  };
  // Float bounds make an Int64 input's result Float32.
  return with_float_results_for_integer_inputs(std::move(info));
}

OpInfo pow_scalar_entry(const Scalar& exponent, double low, double high) {
  OpInfo info;
  std::ostringstream name;
  name << "pow(" << exponent << ")";
  info.name = name.str();
  info.dtypes = numeric_dtypes();
  info.samples = [low, high](ScalarType dtype) { return unary_samples(dtype, low, high); };
  info.op = [exponent](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{in[0].pow(exponent)};
  };
  info.reference = [exponent](const std::vector<Tensor>& in, const Stack&) {
    const ScalarType dtype = reference_result_type({in[0], wrapped_scalar_tensor(exponent)});
    const double e = exponent.to_double();
    return std::vector<Tensor>{map_unary(in[0], dtype, [e](double x) { return std::pow(x, e); })};
  };
  // An Int64 base with a float exponent gives Float32.
  return exponent.is_floating_point() ? with_float_results_for_integer_inputs(std::move(info))
                                      : info;
}

OpInfo to_entry(ScalarType target) {
  OpInfo info = unary_entry(
      std::string("to(") + to_string(target) + ")",
      [target](const Tensor& x) { return x.to(target); },
      [target](double x) {
        if (target == kBool) return x != 0 ? 1.0 : 0.0;
        return target == kInt64 ? std::trunc(x) : x;
      },
      all_dtypes(), Result::SameDtype);
  info.reference = [target, f = info.reference](const std::vector<Tensor>& in, const Stack& args) {
    Tensor values = f(in, args)[0];
    return std::vector<Tensor>{
        from_values(values.to_vector<double>(), values.sizes().vec(), target)};
  };
  if (!is_floating_point(target)) return without_gradient(std::move(info));
  return info;
}

// fill_ on a copy of the input: every element becomes the value, whose gradient
// and tangent are zero.
OpInfo fill_entry(const Scalar& value, std::vector<ScalarType> dtypes) {
  std::ostringstream name;
  name << "fill_(" << value << ")";
  OpInfo info = unary_entry(
      name.str(), nullptr, [v = value.to_double()](double) { return v; }, std::move(dtypes),
      Result::SameDtype);
  return in_place_entry(std::move(info), name.str(), [value](const Tensor& x) { x.fill_(value); });
}

}  // namespace

STRATA_OP_INFOS(elementwise_unary) {
  using std::numbers::sqrt2;
  const Result same = Result::SameDtype;
  const Result floating = Result::Floating;
  std::vector<OpInfo> infos;
  auto add = [&](OpInfo info) { infos.push_back(std::move(info)); };

  // The in-place variant of the entry just added, on the dtypes that can hold its
  // result: an integer self cannot take floating math's Float32 values.
  auto in_place_of = [&](std::string name, const Tensor& (Tensor::*method)() const,
                         std::vector<ScalarType> dtypes) {
    infos.back().inplace_variant = name;
    OpInfo info = in_place_entry(infos.back(), name, method);
    info.dtypes = std::move(dtypes);
    add(std::move(info));
  };
  // Floating math in place, on contiguous targets only: the target is made inside
  // the entry, so trace keeps it as a constant, whose text form is contiguous; a
  // strided target runs the scalar loop where a contiguous one runs Eigen's
  // vectorised math, which may differ in the last bit, and OpTrace compares replays
  // bit for bit. Strided in-place writes are checked in elementwise_semantics_test.
  auto floating_in_place_of = [&](std::string name, const Tensor& (Tensor::*method)() const) {
    in_place_of(std::move(name), method, floating_dtypes());
    infos.back().samples = [samples = infos.back().samples](ScalarType dtype) {
      std::vector<Sample> all = samples(dtype);
      std::erase_if(all, [](const Sample& s) { return !s.inputs[0].is_contiguous(); });
      return all;
    };
  };

  // Numeric ops keep the dtype; Int64 included.
  add(unary_entry(
      "neg", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, numeric_dtypes(),
      same));
  in_place_of("neg_", &Tensor::neg_, numeric_dtypes());
  add(unary_entry(
      "abs", [](const Tensor& x) { return x.abs(); }, [](double x) { return std::fabs(x); },
      numeric_dtypes(), same));
  in_place_of("abs_", &Tensor::abs_, numeric_dtypes());
  add(without_gradient(unary_entry(
      "sign", [](const Tensor& x) { return x.sign(); }, sign_of, numeric_dtypes(), same)));
  in_place_of("sign_", &Tensor::sign_, numeric_dtypes());
  add(unary_entry(
      "square", [](const Tensor& x) { return x.square(); }, [](double x) { return x * x; },
      numeric_dtypes(), same));
  in_place_of("square_", &Tensor::square_, numeric_dtypes());
  add(unary_entry(
      "relu", [](const Tensor& x) { return x.relu(); }, [](double x) { return x > 0 ? x : 0.0; },
      numeric_dtypes(), same));
  in_place_of("relu_", &Tensor::relu_, numeric_dtypes());
  // Rounding: integers pass through; the derivative is zero wherever it exists.
  add(without_gradient(unary_entry(
      "floor", [](const Tensor& x) { return x.floor(); }, [](double x) { return std::floor(x); },
      numeric_dtypes(), same)));
  in_place_of("floor_", &Tensor::floor_, numeric_dtypes());
  add(without_gradient(unary_entry(
      "ceil", [](const Tensor& x) { return x.ceil(); }, [](double x) { return std::ceil(x); },
      numeric_dtypes(), same)));
  in_place_of("ceil_", &Tensor::ceil_, numeric_dtypes());
  // Half to even, in the default rounding mode; the samples include exact halves.
  OpInfo round = without_gradient(unary_entry(
      "round", [](const Tensor& x) { return x.round(); },
      [](double x) { return std::nearbyint(x); }, numeric_dtypes(), same));
  round.samples = [samples = round.samples](ScalarType dtype) {
    std::vector<Sample> all = samples(dtype);
    if (is_floating_point(dtype)) {
      all.push_back({"halves", {from_values({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}, {6}, dtype)}, {}});
    }
    return all;
  };
  add(std::move(round));
  in_place_of("round_", &Tensor::round_, numeric_dtypes());

  // Floating math: Int64 and Bool inputs give Float32.
  auto math = [&](std::string name, UnaryFn op, double (*f)(double), double low = -2.0,
                  double high = 2.0) {
    add(with_float_results_for_integer_inputs(
        unary_entry(std::move(name), std::move(op), f, all_dtypes(), floating, low, high)));
  };
  math(
      "exp", [](const Tensor& x) { return x.exp(); }, [](double x) { return std::exp(x); });
  floating_in_place_of("exp_", &Tensor::exp_);
  math(
      "expm1", [](const Tensor& x) { return x.expm1(); }, [](double x) { return std::expm1(x); });
  floating_in_place_of("expm1_", &Tensor::expm1_);
  math(
      "log", [](const Tensor& x) { return x.log(); }, [](double x) { return std::log(x); }, 0.25,
      4.0);
  floating_in_place_of("log_", &Tensor::log_);
  math(
      "log1p", [](const Tensor& x) { return x.log1p(); }, [](double x) { return std::log1p(x); },
      -0.75, 3.0);
  floating_in_place_of("log1p_", &Tensor::log1p_);
  math(
      "sqrt", [](const Tensor& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0.25,
      4.0);
  floating_in_place_of("sqrt_", &Tensor::sqrt_);
  math(
      "rsqrt", [](const Tensor& x) { return x.rsqrt(); },
      [](double x) { return 1.0 / std::sqrt(x); }, 0.25, 4.0);
  floating_in_place_of("rsqrt_", &Tensor::rsqrt_);
  math(
      "reciprocal", [](const Tensor& x) { return x.reciprocal(); },
      [](double x) { return 1.0 / x; }, 0.25, 4.0);
  floating_in_place_of("reciprocal_", &Tensor::reciprocal_);
  math(
      "sin", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, -4.0,
      4.0);
  floating_in_place_of("sin_", &Tensor::sin_);
  math(
      "cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -4.0,
      4.0);
  floating_in_place_of("cos_", &Tensor::cos_);
  math(
      "tanh", [](const Tensor& x) { return x.tanh(); }, [](double x) { return std::tanh(x); });
  floating_in_place_of("tanh_", &Tensor::tanh_);
  math(
      "sigmoid", [](const Tensor& x) { return x.sigmoid(); },
      [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -6.0, 6.0);
  floating_in_place_of("sigmoid_", &Tensor::sigmoid_);
  math(
      "silu", [](const Tensor& x) { return nn::silu(x); },
      [](double x) { return x / (1.0 + std::exp(-x)); }, -6.0, 6.0);
  floating_in_place_of("silu_", &Tensor::silu_);
  math(
      "gelu", [](const Tensor& x) { return x.gelu(); },
      [](double x) { return 0.5 * x * (1.0 + std::erf(x / sqrt2)); }, -4.0, 4.0);
  math(
      "gelu(approximate=tanh)", [](const Tensor& x) { return gelu(x, "tanh"); },
      [](double x) {
        const double inner = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
        return 0.5 * x * (1.0 + std::tanh(inner));
      },
      -4.0, 4.0);
  math(
      "softplus", [](const Tensor& x) { return x.softplus(); },
      [](double x) { return std::log(1.0 + std::exp(x)); }, -4.0, 4.0);
  // beta * x crosses the threshold inside the sample range: both branches run.
  math(
      "softplus(beta=2,threshold=1)", [](const Tensor& x) { return x.softplus(2, 1); },
      [](double x) { return 2 * x > 1 ? x : std::log(1.0 + std::exp(2 * x)) / 2; });

  add(unary_entry(
      "logical_not", [](const Tensor& x) { return !x; },
      [](double x) { return x == 0 ? 1.0 : 0.0; }, all_dtypes(), Result::Bool));

  add(pow_scalar_entry(2, -2.0, 2.0));
  add(pow_scalar_entry(3, -2.0, 2.0));
  add(pow_scalar_entry(0, -2.0, 2.0));
  add(pow_scalar_entry(0.5, 0.25, 4.0));
  add(pow_scalar_entry(-1.0, 0.25, 4.0));
  add(pow_scalar_entry(-0.5, 0.25, 4.0));
  add(pow_scalar_entry(1.7, 0.25, 4.0));

  add(clamp_entry("clamp(-0.5,0.5)", -0.5, 0.5));
  add(clamp_entry("clamp(-1,1)", Scalar(-1), Scalar(1)));
  infos.back().inplace_variant = "clamp_";
  add(clamp_entry("clamp(min=0)", Scalar(0), std::nullopt));
  add(clamp_entry("clamp(max=0.25)", std::nullopt, 0.25));
  add(clamp_entry("clamp(min>max)", 1.0, -1.0));
  add(in_place_entry(clamp_entry("clamp_(-1,1)", Scalar(-1), Scalar(1)), "clamp_(-1,1)",
                     [](const Tensor& x) { x.clamp_(Scalar(-1), Scalar(1)); }));
  add(in_place_entry(clamp_entry("clamp_(max=0.5)", std::nullopt, 0.5), "clamp_(max=0.5)",
                     [](const Tensor& x) { x.clamp_(std::nullopt, 0.5); }));
  infos.back().dtypes = floating_dtypes();  // a float bound cannot be written into Int64

  add(fill_entry(2.5, floating_dtypes()));
  add(fill_entry(-3, numeric_dtypes()));
  add(fill_entry(true, all_dtypes()));
  add(unary_entry(
      "clone", [](const Tensor& x) { return x.clone(); }, [](double x) { return x; }, all_dtypes(),
      same));
  add(unary_entry(
      "contiguous", [](const Tensor& x) { return x.contiguous(); }, [](double x) { return x; },
      all_dtypes(), same));
  for (ScalarType target : all_dtypes()) add(to_entry(target));
  return infos;
}

}  // namespace strata::testing
