// Op-table entries: comparisons, logical and/or (Bool results, every dtype), and
// where.
#include "tests/op_table/elementwise_entries.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using Predicate = std::function<bool(double, double)>;

// Equal values are rare in random floats: compare a tensor with itself too.
std::vector<Sample> comparison_samples(ScalarType dtype) {
  std::vector<Sample> samples = binary_and_mixed_samples(dtype);
  Tensor x = make_tensor({3, 4}, dtype, Layout::Sliced);
  samples.push_back({"a tensor with itself", {x, x}, {}});
  return samples;
}

OpInfo comparison_entry(std::string name, BinaryFn op, Predicate p) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = comparison_samples;
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(in[0], in[1])};
  };
  info.reference = [p](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{
        map_binary(in[0], in[1], kBool, [&](double a, double b) { return p(a, b) ? 1.0 : 0.0; })};
  };
  return without_gradient(std::move(info));
}

// x compared with a number through the C++ operator (a wrapped number).
OpInfo scalar_comparison_entry(std::string name, std::function<Tensor(const Tensor&)> op,
                               double number, Predicate p) {
  OpInfo info = comparison_entry(std::move(name), nullptr, p);
  info.samples = [](ScalarType dtype) { return unary_samples(dtype); };
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(in[0])};
  };
  info.reference = [p, number](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{
        map_unary(in[0], kBool, [&](double x) { return p(x, number) ? 1.0 : 0.0; })};
  };
  return info;
}

std::vector<Sample> where_samples(ScalarType dtype) {
  std::vector<Sample> samples;
  for (const TernaryCase& c : ternary_cases()) {
    samples.push_back(
        {c.first.description() + " ? " + c.second.description() + " : " + c.third.description(),
         {make_tensor(c.first.sizes, kBool, c.first.layout, 0, 1, 3),
          make_tensor(c.second.sizes, dtype, c.second.layout, -2, 2, 1),
          make_tensor(c.third.sizes, dtype, c.third.layout, -2, 2, 2)},
         {}});
  }
  // Mixed dtypes promote: the other branch in every other dtype, and a number.
  const Tensor condition = make_tensor({3, 4}, kBool, Layout::Transposed, 0, 1, 3);
  for (ScalarType other : all_dtypes()) {
    if (other == dtype) continue;
    samples.push_back({std::string("other branch ") + to_string(other),
                       {condition, make_tensor({3, 4}, dtype), make_tensor({4}, other)},
                       {}});
  }
  samples.push_back({"other branch a wrapped 2.5",
                     {condition, make_tensor({3, 4}, dtype), wrapped_scalar_tensor(2.5)},
                     {}});
  return samples;
}

OpInfo where_entry() {
  OpInfo info;
  info.name = "where";
  info.dtypes = all_dtypes();
  info.samples = where_samples;
  info.op = [](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{where(in[0], in[1], in[2])};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack&) {
    const ScalarType dtype = reference_result_type({in[1], in[2]});
    return std::vector<Tensor>{
        map_nary(in, dtype, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; })};
  };
  return info;
}

}  // namespace

STRATA_OP_INFOS(elementwise_compare) {
  std::vector<OpInfo> infos;
  auto add_info = [&](OpInfo info) { infos.push_back(std::move(info)); };
  add_info(comparison_entry(
      "eq", [](const Tensor& a, const Tensor& b) { return a == b; },
      [](double a, double b) { return a == b; }));
  add_info(comparison_entry(
      "ne", [](const Tensor& a, const Tensor& b) { return a != b; },
      [](double a, double b) { return a != b; }));
  add_info(comparison_entry(
      "lt", [](const Tensor& a, const Tensor& b) { return a < b; },
      [](double a, double b) { return a < b; }));
  add_info(comparison_entry(
      "le", [](const Tensor& a, const Tensor& b) { return a <= b; },
      [](double a, double b) { return a <= b; }));
  add_info(comparison_entry(
      "gt", [](const Tensor& a, const Tensor& b) { return a > b; },
      [](double a, double b) { return a > b; }));
  add_info(comparison_entry(
      "ge", [](const Tensor& a, const Tensor& b) { return a >= b; },
      [](double a, double b) { return a >= b; }));
  add_info(comparison_entry(
      "logical_and", [](const Tensor& a, const Tensor& b) { return a && b; },
      [](double a, double b) { return a != 0 && b != 0; }));
  add_info(comparison_entry(
      "logical_or", [](const Tensor& a, const Tensor& b) { return a || b; },
      [](double a, double b) { return a != 0 || b != 0; }));

  add_info(scalar_comparison_entry(
      "gt(x,0.5)", [](const Tensor& x) { return x > 0.5; }, 0.5,
      [](double a, double b) { return a > b; }));
  add_info(scalar_comparison_entry(
      "eq(x,1)", [](const Tensor& x) { return x == 1; }, 1,
      [](double a, double b) { return a == b; }));
  add_info(scalar_comparison_entry(
      "le(x,0)", [](const Tensor& x) { return x <= 0; }, 0,
      [](double a, double b) { return a <= b; }));
  add_info(scalar_comparison_entry(
      "ne(x,0)", [](const Tensor& x) { return x != 0; }, 0,
      [](double a, double b) { return a != b; }));

  add_info(where_entry());
  return infos;
}

}  // namespace strata::testing
