// Op-table entries: factories (zeros, ones, arange, linspace, eye) and the *_like
// family. The references build the expected values with plain loops from the definitions;
// random ops have no loop reference and are tested in tests/ops/random_test.cpp.
#include <sstream>

#include "tests/op_table/elementwise_entries.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using TensorFromArgs = std::function<Tensor(const Stack&)>;

// Factories take no tensor: nothing to differentiate or to batch.
OpInfo factory_entry(std::string name, std::vector<ScalarType> dtypes,
                     std::function<std::vector<Sample>(ScalarType)> samples, TensorFromArgs op,
                     TensorFromArgs reference) {
  OpInfo info = make_op_info(
      std::move(name), std::move(dtypes), std::move(samples),
      [op](const std::vector<Tensor>&, const Stack& args) { return std::vector<Tensor>{op(args)}; },
      [reference](const std::vector<Tensor>&, const Stack& args) {
        return std::vector<Tensor>{reference(args)};
      });
  info.batching_rule = false;
  info.factory = true;
  return without_gradient(std::move(info));
}

std::optional<ScalarType> dtype_arg(const IValue& v) {
  if (v.is_none()) return std::nullopt;
  return v.to_scalar_type();
}

template <class T>
std::string describe(std::initializer_list<T> parts) {
  std::ostringstream out;
  const char* separator = "";
  for (const T& part : parts) {
    out << separator << part;
    separator = ", ";
  }
  return out.str();
}

// ---- zeros, ones ------------------------------------------------------------------

// Sizes with no elements and with none at all among them; Float32 when no dtype is given.
std::vector<Sample> filled_samples(std::optional<ScalarType> dtype) {
  const std::vector<std::vector<int64_t>> cases = {{2, 3}, {}, {0}, {1}, {4, 0, 2}, {2, 1, 3}};
  std::vector<Sample> samples;
  for (const std::vector<int64_t>& sizes : cases) {
    samples.push_back({"size = " + shape_string(sizes), {}, {IValue(sizes), IValue(dtype)}});
  }
  return samples;
}

// Every element `value`, counted out element by element.
TensorFromArgs filled_reference(double value) {
  return [value](const Stack& args) {
    const std::vector<int64_t>& sizes = args[0].to_int_list();
    int64_t numel = 1;
    for (int64_t s : sizes) numel *= s;
    const std::vector<double> values(static_cast<size_t>(numel), value);
    return from_values(values, sizes, dtype_arg(args[1]).value_or(kFloat32));
  };
}

struct FilledFactory {
  std::string name;
  Tensor (*op)(IntArrayRef, std::optional<ScalarType>, std::optional<Device>);
  double value;
};

void add_filled_entries(std::vector<OpInfo>& infos) {
  for (const FilledFactory& f : {FilledFactory{"zeros", &zeros, 0.0}, {"ones", &ones, 1.0}}) {
    const TensorFromArgs call = [op = f.op](const Stack& a) {
      return op(a[0].to_int_list(), dtype_arg(a[1]), std::nullopt);
    };
    infos.push_back(factory_entry(
        f.name, all_dtypes(), [](ScalarType dtype) { return filled_samples(dtype); }, call,
        filled_reference(f.value)));
    infos.push_back(factory_entry(
        f.name + "(default dtype)", {kFloat32},
        [](ScalarType) { return filled_samples(std::nullopt); }, call, filled_reference(f.value)));
  }
}

// ---- arange ----------------------------------------------------------------------

struct ArangeCase {
  Scalar start, end, step;
};

std::vector<ArangeCase> integer_ranges() {
  const int64_t big = int64_t{1} << 40;
  return {{0, 5, 1}, {-3, 7, 2}, {10, -2, -3},       {4, 4, 1},
          {2, 3, 5}, {-7, 8, 4}, {big, big + 10, 3}, {0, -1, -1}};
}

std::vector<ArangeCase> floating_ranges() {
  return {{-1.5, 2.25, 0.25}, {1.0, 0.0, -0.1}, {0, 1, 0.3}, {0, 2.5, 1}, {0.5, 0.5, 1}};
}

// The values start, start + step, ... before end, found by walking, not by a formula.
std::vector<double> walk_range(double start, double end, double step) {
  std::vector<double> values;
  for (int64_t i = 0;; ++i) {
    const double v = start + static_cast<double>(i) * step;
    if (step > 0 ? v >= end : v <= end) break;
    values.push_back(v);
  }
  return values;
}

Tensor arange_reference(const Stack& args) {
  const Scalar start = args[0].to_scalar(), end = args[1].to_scalar(), step = args[2].to_scalar();
  const bool any_floating =
      start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
  const ScalarType dtype = dtype_arg(args[3]).value_or(any_floating ? kFloat32 : kInt64);
  const std::vector<double> values =
      walk_range(start.to_double(), end.to_double(), step.to_double());
  return from_values(values, {static_cast<int64_t>(values.size())}, dtype);
}

std::vector<Sample> arange_samples(const std::vector<ArangeCase>& cases,
                                   std::optional<ScalarType> dtype) {
  std::vector<Sample> samples;
  for (const ArangeCase& c : cases) {
    samples.push_back({"start, end, step = " + describe({c.start, c.end, c.step}),
                       {},
                       {c.start, c.end, c.step, IValue(dtype)}});
  }
  return samples;
}

void add_arange_entries(std::vector<OpInfo>& infos) {
  infos.push_back(factory_entry(
      "arange", numeric_dtypes(),
      [](ScalarType dtype) {
        std::vector<ArangeCase> cases = integer_ranges();
        for (const ArangeCase& c : floating_ranges()) cases.push_back(c);
        return arange_samples(cases, dtype);
      },
      [](const Stack& a) {
        return arange(a[0].to_scalar(), a[1].to_scalar(), a[2].to_scalar(), dtype_arg(a[3]));
      },
      arange_reference));
  // No dtype: Int64 for integer arguments (the Int64 samples), else Float32.
  infos.push_back(factory_entry(
      "arange(inferred dtype)", {kInt64, kFloat32},
      [](ScalarType dtype) {
        return arange_samples(dtype == kInt64 ? integer_ranges() : floating_ranges(), std::nullopt);
      },
      [](const Stack& a) { return arange(a[0].to_scalar(), a[1].to_scalar(), a[2].to_scalar()); },
      arange_reference));
  infos.push_back(factory_entry(
      "arange(end)", {kInt64, kFloat32},
      [](ScalarType dtype) {
        const std::vector<Scalar> ends =
            dtype == kInt64 ? std::vector<Scalar>{0, 1, 6} : std::vector<Scalar>{0.5, 2.5, 3.0};
        std::vector<Sample> samples;
        for (const Scalar& end : ends) {
          samples.push_back(
              {"end = " + describe({end}), {}, {Scalar(0), end, Scalar(1), IValue()}});
        }
        return samples;
      },
      [](const Stack& a) { return arange(a[1].to_scalar()); }, arange_reference));
}

// ---- linspace --------------------------------------------------------------------

Tensor linspace_reference(const Stack& args) {
  const double start = args[0].to_double(), end = args[1].to_double();
  const int64_t steps = args[2].to_int();
  std::vector<double> values;
  for (int64_t i = 0; i < steps; ++i) {
    values.push_back(i == 0           ? start
                     : i == steps - 1 ? end
                                      : start + static_cast<double>(i) * (end - start) /
                                                    static_cast<double>(steps - 1));
  }
  return from_values(values, {steps}, dtype_arg(args[3]).value_or(kFloat32));
}

std::vector<Sample> linspace_samples(std::optional<ScalarType> dtype, bool floating) {
  struct Case {
    double start, end;
    int64_t steps;
  };
  // Spacings that are exact in binary, so Int64 truncation is unambiguous.
  std::vector<Case> cases = {{0, 10, 6}, {-4, 4, 5}, {0, 3, 7}, {2, -4, 7},
                             {3, 8, 1},  {0, 1, 0},  {-2, 3, 2}};
  if (floating) cases.push_back({0, 1, 7});
  std::vector<Sample> samples;
  for (const Case& c : cases) {
    samples.push_back({"start, end, steps = " + describe({c.start, c.end, double(c.steps)}),
                       {},
                       {c.start, c.end, c.steps, IValue(dtype)}});
  }
  return samples;
}

void add_linspace_entries(std::vector<OpInfo>& infos) {
  const TensorFromArgs op = [](const Stack& a) {
    return linspace(a[0].to_scalar(), a[1].to_scalar(), a[2].to_int(), dtype_arg(a[3]));
  };
  infos.push_back(factory_entry(
      "linspace", numeric_dtypes(),
      [](ScalarType dtype) { return linspace_samples(dtype, is_floating_point(dtype)); }, op,
      linspace_reference));
  infos.push_back(factory_entry(
      "linspace(default dtype)", {kFloat32},
      [](ScalarType) { return linspace_samples(std::nullopt, true); }, op, linspace_reference));
}

// ---- eye -------------------------------------------------------------------------

Tensor eye_reference(const Stack& args) {
  const int64_t n = args[0].to_int();
  const int64_t m = args[1].is_none() ? n : args[1].to_int();
  std::vector<double> values;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) values.push_back(i == j ? 1.0 : 0.0);
  }
  return from_values(values, {n, m}, dtype_arg(args[2]).value_or(kFloat32));
}

std::vector<Sample> eye_samples(std::optional<ScalarType> dtype) {
  const std::vector<std::pair<int64_t, std::optional<int64_t>>> cases = {
      {3, std::nullopt}, {2, 5}, {4, 2}, {0, std::nullopt}, {1, std::nullopt}, {3, 0}, {0, 4}};
  std::vector<Sample> samples;
  for (const auto& [n, m] : cases) {
    samples.push_back({"n = " + std::to_string(n) + (m ? ", m = " + std::to_string(*m) : ""),
                       {},
                       {n, IValue(m), IValue(dtype)}});
  }
  return samples;
}

void add_eye_entries(std::vector<OpInfo>& infos) {
  const TensorFromArgs op = [](const Stack& a) {
    return eye(a[0].to_int(), a[1].is_none() ? std::nullopt : std::optional<int64_t>(a[1].to_int()),
               dtype_arg(a[2]));
  };
  infos.push_back(factory_entry(
      "eye", all_dtypes(), [](ScalarType dtype) { return eye_samples(dtype); }, op, eye_reference));
  infos.push_back(factory_entry(
      "eye(default dtype)", {kFloat32}, [](ScalarType) { return eye_samples(std::nullopt); }, op,
      eye_reference));
}

// ---- the *_like family -----------------------------------------------------------

// `like` comes from unary_samples (0-dim, empty, non-contiguous, ...); the result
// has its shape and the given dtype (like's when none), filled with `value`.
OpInfo like_entry(std::string name, std::vector<ScalarType> dtypes,
                  std::function<Tensor(const Tensor&)> op, double value,
                  std::optional<ScalarType> dtype) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = [](ScalarType d) { return unary_samples(d); };
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(in[0])};
  };
  info.reference = [value, dtype](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{
        map_unary(in[0], dtype.value_or(in[0].dtype()), [value](double) { return value; })};
  };
  // The output does not depend on like's values.
  return without_gradient(std::move(info));
}

void add_like_entries(std::vector<OpInfo>& infos) {
  // empty_like's values are unspecified: zeroed here so shape and dtype are compared.
  infos.push_back(like_entry(
      "empty_like", all_dtypes(),
      [](const Tensor& x) {
        Tensor out = empty_like(x);
        out.zero_();
        return out;
      },
      0, std::nullopt));
  infos.push_back(like_entry(
      "empty_like(dtype=Int64)", all_dtypes(),
      [](const Tensor& x) {
        Tensor out = empty_like(x, kInt64);
        out.zero_();
        return out;
      },
      0, kInt64));
  infos.push_back(like_entry(
      "zeros_like", all_dtypes(), [](const Tensor& x) { return zeros_like(x); }, 0, std::nullopt));
  infos.push_back(like_entry(
      "zeros_like(dtype=Float64)", all_dtypes(),
      [](const Tensor& x) { return zeros_like(x, kFloat64); }, 0, kFloat64));
  infos.push_back(like_entry(
      "ones_like", all_dtypes(), [](const Tensor& x) { return ones_like(x); }, 1, std::nullopt));
  infos.push_back(like_entry(
      "ones_like(dtype=Bool)", all_dtypes(), [](const Tensor& x) { return ones_like(x, kBool); }, 1,
      kBool));
  infos.push_back(like_entry(
      "full_like(7)", all_dtypes(), [](const Tensor& x) { return full_like(x, 7); }, 7,
      std::nullopt));
  infos.push_back(like_entry(
      "full_like(-2.5)", floating_dtypes(), [](const Tensor& x) { return full_like(x, -2.5); },
      -2.5, std::nullopt));
  infos.push_back(like_entry(
      "full_like(-2.5, dtype=Float32)", all_dtypes(),
      [](const Tensor& x) { return full_like(x, -2.5, kFloat32); }, -2.5, kFloat32));
}

STRATA_OP_INFOS(creation) {
  std::vector<OpInfo> infos;
  add_filled_entries(infos);
  add_arange_entries(infos);
  add_linspace_entries(infos);
  add_eye_entries(infos);
  add_like_entries(infos);
  return infos;
}

}  // namespace
}  // namespace strata::testing
