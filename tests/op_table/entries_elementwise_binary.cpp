// Op-table entries: elementwise binary arithmetic, its in-place variants, and the
// C++ operators with a number on one side (wrapped numbers).
#include <algorithm>
#include <cmath>

#include "ops/elementwise_backward.h"
#include "tests/op_table/elementwise_entries.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using ValueFn = std::function<double(double, double)>;

// Division's result is floating even for integer inputs.
ScalarType promoted_dtype(const std::vector<Tensor>& in, bool floating) {
  const ScalarType dtype = reference_result_type(in);
  return floating && (dtype == kBool || dtype == kInt64) ? kFloat32 : dtype;
}

OpInfo binary_entry(std::string name, BinaryFn op, ValueFn f, std::vector<ScalarType> dtypes,
                    double low = -2.0, double high = 2.0, bool floating_result = false) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = [low, high](ScalarType dtype) {
    return binary_and_mixed_samples(dtype, low, high);
  };
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(in[0], in[1])};
  };
  info.reference = [f, floating_result](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{map_binary(in[0], in[1], promoted_dtype(in, floating_result), f)};
  };
  return with_float_results_for_integer_inputs(std::move(info));
}

int category(ScalarType t) { return t == kBool ? 0 : t == kInt64 ? 1 : 2; }

// self.op_(other) on a copy of self: the result is self's dtype and shape.
OpInfo in_place_entry(std::string name, std::function<void(const Tensor&, const Tensor&)> op,
                      ValueFn f, std::vector<ScalarType> dtypes, bool floating_result = false,
                      double low = -2.0, double high = 2.0) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = [floating_result, low, high](ScalarType dtype) {
    std::vector<Sample> samples = in_place_samples(binary_and_mixed_samples(dtype, low, high));
    std::erase_if(samples, [&](const Sample& s) {
      return category(promoted_dtype(s.inputs, floating_result)) > category(s.inputs[0].dtype());
    });
    return samples;
  };
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    Tensor self = in_place_target(copy_keeping_layout(in[0]), in[1]);
    op(self, in[1]);
    return std::vector<Tensor>{self};
  };
  info.reference = [f](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{map_binary(in[0], in[1], in[0].dtype(), f)};
  };
  return info;
}

// `x op number` (or `number op x`) through the C++ operator.
OpInfo scalar_operator_entry(std::string name, std::function<Tensor(const Tensor&)> op,
                             Scalar number, bool number_first, ValueFn f,
                             bool floating_result = false) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [](ScalarType dtype) { return unary_samples(dtype); };
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(in[0])};
  };
  info.reference = [=](const std::vector<Tensor>& in, const Stack&) {
    const ScalarType dtype =
        promoted_dtype({in[0], wrapped_scalar_tensor(number)}, floating_result);
    const double n = number.to_double();
    return std::vector<Tensor>{
        map_unary(in[0], dtype, [&](double x) { return number_first ? f(n, x) : f(x, n); })};
  };
  return with_float_results_for_integer_inputs(std::move(info));
}

// Integer powers by repeated multiplication; a negative exponent truncates
// 1 / base^|exponent| toward zero (0 unless the base is 1 or -1).
double integer_pow(double base, double exponent) {
  if (exponent < 0) return std::fabs(base) == 1 ? std::pow(base, exponent) : 0.0;
  double result = 1;
  for (int64_t k = 0; k < static_cast<int64_t>(exponent); ++k) result *= base;
  return result;
}

OpInfo pow_entry() {
  OpInfo info = binary_entry(
      "pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, nullptr, numeric_dtypes(),
      0.25, 2.5);
  info.inplace_variant = "pow_";
  info.reference = [](const std::vector<Tensor>& in, const Stack&) {
    const ScalarType dtype = reference_result_type(in);
    const bool integer = dtype == kInt64;
    return std::vector<Tensor>{map_binary(in[0], in[1], dtype, [integer](double a, double b) {
      return integer ? integer_pow(a, b) : std::pow(a, b);
    })};
  };
  return info;
}

// Samples of a fused op on `operands` (3 or 4) tensors: the three-way broadcasts
// and layouts (a fourth operand repeats the first's shape and layout with other
// values), then promotion: the last operand in each other numeric dtype, and a
// wrapped number.
std::vector<Sample> fused_samples(ScalarType dtype, size_t operands) {
  std::vector<Sample> samples;
  for (const TernaryCase& c : ternary_cases()) {
    const ShapeCase* shapes[] = {&c.first, &c.second, &c.third, &c.first};
    Sample sample;
    for (size_t k = 0; k < operands; ++k) {
      sample.description += (k > 0 ? ", " : "") + shapes[k]->description();
      sample.inputs.push_back(
          make_tensor(shapes[k]->sizes, dtype, shapes[k]->layout, -2, 2, static_cast<int>(k + 1)));
    }
    samples.push_back(std::move(sample));
  }
  auto leading = [&] {
    std::vector<Tensor> in{make_tensor({3, 4}, dtype), make_tensor({4}, dtype, -2, 2, 1)};
    if (operands == 4) in.push_back(make_tensor({3, 1}, dtype, -2, 2, 3));
    return in;
  };
  for (ScalarType other : numeric_dtypes()) {
    if (other == dtype) continue;
    std::vector<Tensor> in = leading();
    in.push_back(make_tensor({3, 1}, other, -2, 2, 2));
    samples.push_back({std::string("last operand ") + to_string(other), std::move(in), {}});
  }
  std::vector<Tensor> in = leading();
  in.push_back(wrapped_scalar_tensor(2.5));
  samples.push_back({"last operand a wrapped 2.5", std::move(in), {}});
  return samples;
}

OpInfo addcmul_entry(std::string name, Scalar value, std::vector<ScalarType> dtypes) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = [](ScalarType dtype) { return fused_samples(dtype, 3); };
  info.op = [value](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{addcmul(in[0], in[1], in[2], value)};
  };
  info.reference = [value](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{map_nary(
        in, reference_result_type(in),
        [v = value.to_double()](const std::vector<double>& x) { return x[0] + v * x[1] * x[2]; })};
  };
  return with_float_results_for_integer_inputs(std::move(info));
}

OpInfo mul_add_entry() {
  OpInfo info;
  info.name = "mul_add";
  info.dtypes = numeric_dtypes();
  info.samples = [](ScalarType dtype) { return fused_samples(dtype, 4); };
  info.op = [](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{mul_add(in[0], in[1], in[2], in[3])};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{
        map_nary(in, reference_result_type(in),
                 [](const std::vector<double>& x) { return x[0] * x[1] + x[2] * x[3]; })};
  };
  return with_float_results_for_integer_inputs(std::move(info));
}

}  // namespace

STRATA_OP_INFOS(elementwise_binary) {
  std::vector<OpInfo> infos;
  auto add_info = [&](OpInfo info) { infos.push_back(std::move(info)); };
  const ValueFn plus = [](double a, double b) { return a + b; };
  const ValueFn minus = [](double a, double b) { return a - b; };
  const ValueFn times = [](double a, double b) { return a * b; };
  const ValueFn divide = [](double a, double b) { return a / b; };
  // On Bool, + is `or` and * is `and`: 1 + 1 must read back as true.
  const ValueFn bool_plus = [](double a, double b) { return a + b != 0 ? 1.0 : 0.0; };

  add_info(binary_entry(
      "add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, plus, numeric_dtypes()));
  infos.back().inplace_variant = "add_";
  add_info(binary_entry("add(Bool)", [](const Tensor& a, const Tensor& b) { return a + b; },
                        bool_plus, {kBool}));
  infos.back().samples = [](ScalarType dtype) { return binary_samples(dtype); };
  add_info(binary_entry(
      "add(alpha=2)", [](const Tensor& a, const Tensor& b) { return add(a, b, 2); },
      [](double a, double b) { return a + 2 * b; }, numeric_dtypes()));
  add_info(binary_entry(
      "add(alpha=0.5)", [](const Tensor& a, const Tensor& b) { return add(a, b, 0.5); },
      [](double a, double b) { return a + 0.5 * b; }, floating_dtypes()));
  add_info(binary_entry(
      "sub", [](const Tensor& a, const Tensor& b) { return a - b; }, minus, numeric_dtypes()));
  infos.back().inplace_variant = "sub_";
  add_info(binary_entry(
      "sub(alpha=3)", [](const Tensor& a, const Tensor& b) { return sub(a, b, 3); },
      [](double a, double b) { return a - 3 * b; }, numeric_dtypes()));
  add_info(binary_entry(
      "mul", [](const Tensor& a, const Tensor& b) { return a * b; }, times, all_dtypes()));
  infos.back().inplace_variant = "mul_";
  // Integer inputs divide as Float32 (true division).
  add_info(binary_entry(
      "div", [](const Tensor& a, const Tensor& b) { return a / b; }, divide, all_dtypes(), 0.5, 3.0,
      /*floating_result=*/true));
  infos.back().inplace_variant = "div_";
  add_info(pow_entry());
  // Negative integer exponents: 0 unless the base is 1 or -1.
  add_info(pow_entry());
  infos.back().name = "pow(Int64,negative)";
  infos.back().dtypes = {kInt64};
  infos.back().samples = [](ScalarType dtype) { return binary_samples(dtype, -3.0, 3.0); };
  add_info(binary_entry(
      "maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
      [](double a, double b) { return a > b ? a : b; }, all_dtypes()));
  // Integer inputs compute in Float32, as div does.
  add_info(binary_entry(
      "atan2", [](const Tensor& a, const Tensor& b) { return a.atan2(b); },
      [](double a, double b) { return std::atan2(a, b); }, all_dtypes(), -2.0, 2.0,
      /*floating_result=*/true));
  infos.back().inplace_variant = "atan2_";
  add_info(binary_entry(
      "minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
      [](double a, double b) { return a < b ? a : b; }, all_dtypes()));

  add_info(in_place_entry(
      "add_", [](const Tensor& s, const Tensor& o) { s.add_(o); }, plus, numeric_dtypes()));
  add_info(in_place_entry(
      "add_(alpha=2)", [](const Tensor& s, const Tensor& o) { s.add_(o, 2); },
      [](double a, double b) { return a + 2 * b; }, numeric_dtypes()));
  add_info(in_place_entry(
      "sub_", [](const Tensor& s, const Tensor& o) { s.sub_(o); }, minus, numeric_dtypes()));
  add_info(in_place_entry(
      "sub_(alpha=0.5)", [](const Tensor& s, const Tensor& o) { s.sub_(o, 0.5); },
      [](double a, double b) { return a - 0.5 * b; }, floating_dtypes()));
  add_info(in_place_entry(
      "mul_", [](const Tensor& s, const Tensor& o) { s.mul_(o); }, times, numeric_dtypes()));
  add_info(in_place_entry(
      "div_", [](const Tensor& s, const Tensor& o) { s.div_(o); }, divide, floating_dtypes(),
      /*floating_result=*/true));
  add_info(in_place_entry(
      "pow_", [](const Tensor& s, const Tensor& o) { s.pow_(o); },
      [](double a, double b) { return std::pow(a, b); }, floating_dtypes(), false, 0.25, 2.5));
  add_info(in_place_entry(
      "atan2_", [](const Tensor& s, const Tensor& o) { s.atan2_(o); },
      [](double a, double b) { return std::atan2(a, b); }, floating_dtypes(),
      /*floating_result=*/true));

  add_info(addcmul_entry("addcmul", 1, numeric_dtypes()));
  add_info(addcmul_entry("addcmul(value=0.5)", 0.5, floating_dtypes()));
  add_info(mul_add_entry());
  // The gradients of sin and cos, ops of their own (ops/elementwise_trig_backward.cpp).
  add_info(binary_entry(
      "sin_backward", [](const Tensor& g, const Tensor& x) { return sin_backward(g, x); },
      [](double g, double x) { return g * std::cos(x); }, floating_dtypes(), -3.0, 3.0));
  add_info(binary_entry(
      "cos_backward", [](const Tensor& g, const Tensor& x) { return cos_backward(g, x); },
      [](double g, double x) { return -g * std::sin(x); }, floating_dtypes(), -3.0, 3.0));

  // relu's gradient, an op of its own (ops/elementwise_fused.cpp).
  add_info(binary_entry(
      "relu_backward", [](const Tensor& g, const Tensor& y) { return relu_backward(g, y); },
      [](double g, double y) { return y > 0 ? g : 0.0; }, numeric_dtypes()));

  // The C++ operators with a number on either side (x * 2.5, 3 - x, ...): the number
  // is a wrapped number, so Int64 * 2.5 is Float32, Int64 * 2 stays Int64 and
  // Bool + true stays Bool.
  add_info(scalar_operator_entry(
      "mul(x,2.5)", [](const Tensor& x) { return x * 2.5; }, 2.5, false, times));
  add_info(scalar_operator_entry(
      "mul(x,2)", [](const Tensor& x) { return x * 2; }, 2, false, times));
  add_info(scalar_operator_entry(
      "sub(3,x)", [](const Tensor& x) { return 3 - x; }, 3, true, minus));
  add_info(scalar_operator_entry(
      "sub(x,0.5)", [](const Tensor& x) { return x - 0.5; }, 0.5, false, minus));
  add_info(scalar_operator_entry(
      "add(x,true)", [](const Tensor& x) { return x + true; }, true, false, bool_plus));
  infos.back().dtypes = {kBool};
  add_info(scalar_operator_entry(
      "add(x,1)", [](const Tensor& x) { return x + 1; }, 1, false, plus));
  infos.back().dtypes = numeric_dtypes();
  add_info(scalar_operator_entry(
      "div(x,2)", [](const Tensor& x) { return x / 2; }, 2, false, divide,
      /*floating_result=*/true));
  add_info(scalar_operator_entry(
      "div(1.5,x)", [](const Tensor& x) { return 1.5 / x; }, 1.5, true, divide,
      /*floating_result=*/true));
  add_info(scalar_operator_entry(
      "mul(2,x)", [](const Tensor& x) { return 2 * x; }, 2, true, times));
  add_info(scalar_operator_entry(
      "add(1,x)", [](const Tensor& x) { return 1 + x; }, 1, true, plus));
  infos.back().dtypes = numeric_dtypes();

  // Entries on Bool or Int64 alone (Bool `or`, negative integer powers) have
  // nothing to differentiate.
  for (OpInfo& info : infos) {
    if (std::none_of(info.dtypes.begin(), info.dtypes.end(), is_floating_point)) {
      info = without_gradient(std::move(info));
    }
  }
  return infos;
}

}  // namespace strata::testing
