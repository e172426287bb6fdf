// Op-table entries: reductions.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using Group = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct ReductionCase {
  std::vector<int64_t> sizes;
  Layout layout;
  std::vector<int64_t> dims;  // empty: every dim
  bool keepdim;
};

const std::vector<ReductionCase>& reduction_cases() {
  using L = Layout;
  static const std::vector<ReductionCase> cases{
      {{3, 4}, L::Contiguous, {}, false},
      {{3, 4}, L::Contiguous, {}, true},
      {{3, 4}, L::Contiguous, {1}, false},
      {{3, 4}, L::Contiguous, {0}, true},
      {{3, 4}, L::Contiguous, {-1}, false},
      {{2, 3, 4}, L::Contiguous, {0, 2}, false},
      {{2, 3, 4}, L::Contiguous, {-1, 0}, true},
      {{2, 3, 4}, L::Contiguous, {1}, false},
      {{2, 3, 4}, L::Contiguous, {2, 1, 0}, false},
      {{}, L::Contiguous, {}, false},
      {{}, L::Contiguous, {0}, false},
      {{}, L::Contiguous, {-1}, true},
      {{7}, L::Contiguous, {0}, false},
      {{1, 5}, L::Contiguous, {0}, false},
      {{4, 1}, L::Contiguous, {1}, true},
      {{1, 1}, L::Contiguous, {}, false},
      {{0, 3}, L::Contiguous, {0}, false},
      {{0, 3}, L::Contiguous, {1}, true},
      {{0}, L::Contiguous, {}, false},
      {{2, 0, 3}, L::Contiguous, {1}, true},
      {{3, 4}, L::Transposed, {0}, false},
      {{3, 4}, L::Transposed, {1}, true},
      {{3, 4}, L::Transposed, {}, false},
      {{3, 4}, L::Sliced, {1}, false},
      {{3, 4}, L::Sliced, {0}, false},
      {{3, 4}, L::Sliced, {}, false},
      {{3, 4}, L::Expanded, {0}, false},
      {{3, 4}, L::Expanded, {1}, true},
      {{3, 4}, L::Expanded, {}, false},
      {{2, 3, 4}, L::Transposed, {1}, false},
      {{2, 3, 4}, L::Transposed, {0, 2}, true},
      // Large enough for parallel loops, groups split into blocks, the column loop
      // and float32 blocked summation.
      {{70000}, L::Contiguous, {}, false},
      {{3, 40000}, L::Contiguous, {1}, false},
      {{40000, 3}, L::Contiguous, {0}, false},
      {{300, 300}, L::Contiguous, {0}, false},
      {{300, 300}, L::Transposed, {}, false},
      {{300, 300}, L::Sliced, {1}, false},
      {{300, 300}, L::Expanded, {0}, true},
  };
  return cases;
}

// How an op takes its dims: not at all (every dim), as a list, as one dim, or as
// an optional dim (none: the flattened tensor).
enum class DimArgs { None, List, Single, Optional };

struct SampleOptions {
  DimArgs dim_args = DimArgs::List;
  bool needs_values = false;  // no identity: skip groups of zero elements
  bool near_one = false;      // products: keep large inputs near 1 so they stay finite
  bool zeros = false;         // products: groups holding a zero
};

bool accepts(DimArgs kind, const ReductionCase& c) {
  switch (kind) {
    case DimArgs::None: return c.dims.empty() && !c.keepdim;
    case DimArgs::List: return true;
    case DimArgs::Single: return c.dims.size() == 1;
    case DimArgs::Optional: return c.dims.size() <= 1;
  }
  return false;
}

int64_t group_size(const ReductionCase& c) {
  const int64_t rank = static_cast<int64_t>(c.sizes.size());
  int64_t n = 1;
  for (int64_t d = 0; d < rank; ++d) {
    const bool reduced = c.dims.empty() || std::count(c.dims.begin(), c.dims.end(), d) ||
                         std::count(c.dims.begin(), c.dims.end(), d - rank);
    if (reduced) n *= c.sizes[d];
  }
  return n;
}

Stack dim_args(DimArgs kind, const std::vector<int64_t>& dims, bool keepdim) {
  switch (kind) {
    case DimArgs::None: return {};
    case DimArgs::List: return {IValue(dims), IValue(keepdim)};
    case DimArgs::Single: return {IValue(dims.at(0)), IValue(keepdim)};
    case DimArgs::Optional: return {dims.empty() ? IValue() : IValue(dims[0]), IValue(keepdim)};
  }
  return {};
}

std::string describe(IntArrayRef sizes, const char* layout, const std::vector<int64_t>& dims,
                     bool keepdim) {
  std::ostringstream out;
  out << shape_string(sizes) << ' ' << layout << " dims "
      << (dims.empty() ? std::string("all") : shape_string(dims)) << (keepdim ? " keepdim" : "");
  return out.str();
}

// NaN, +inf and -inf in rows and columns: a NaN row, an inf and -inf row, and a
// row of -inf only.
Tensor special_values(ScalarType dtype) {
  return from_values({1, 2, kNaN, 3, kInf, -kInf, 0.5, -1, -kInf, -kInf, -kInf, -kInf}, {3, 4},
                     dtype);
}

std::vector<Sample> reduction_samples(ScalarType dtype, SampleOptions options) {
  std::vector<Sample> samples;
  for (const ReductionCase& c : reduction_cases()) {
    if (!accepts(options.dim_args, c)) continue;
    if (options.needs_values && group_size(c) == 0) continue;
    int64_t numel = 1;
    for (int64_t s : c.sizes) numel *= s;
    const bool bounded = options.near_one && numel > 1000;
    samples.push_back(
        {describe(c.sizes, to_string(c.layout), c.dims, c.keepdim),
         {make_tensor(c.sizes, dtype, c.layout, bounded ? 0.9 : -2.0, bounded ? 1.1 : 2.0)},
         dim_args(options.dim_args, c.dims, c.keepdim)});
  }
  if (options.zeros) {
    // One zero in some groups, which prod's derivative must not divide by.
    const Tensor one_zero =
        from_values({0.5, -1.5, 1.2, 0.8, 1.1, 0.7, 0, -0.9, 1.3, -1.2, 0.6, 1.4}, {3, 4}, dtype);
    for (const ReductionCase& c :
         std::vector<ReductionCase>{{{3, 4}, Layout::Contiguous, {1}, false},
                                    {{3, 4}, Layout::Contiguous, {0}, true},
                                    {{3, 4}, Layout::Contiguous, {}, false}}) {
      if (!accepts(options.dim_args, c)) continue;
      samples.push_back({describe(c.sizes, "one zero", c.dims, c.keepdim),
                         {one_zero},
                         dim_args(options.dim_args, c.dims, c.keepdim)});
    }
  }
  if (is_floating_point(dtype)) {
    for (const ReductionCase& c :
         std::vector<ReductionCase>{{{3, 4}, Layout::Contiguous, {1}, false},
                                    {{3, 4}, Layout::Contiguous, {0}, true},
                                    {{3, 4}, Layout::Contiguous, {}, false}}) {
      if (!accepts(options.dim_args, c)) continue;
      samples.push_back({describe(c.sizes, "nan/inf", c.dims, c.keepdim),
                         {special_values(dtype)},
                         dim_args(options.dim_args, c.dims, c.keepdim)});
    }
  }
  return samples;
}

// Reduces x like the op would for these args, folding each group with fn.
Tensor reference_reduce(const Tensor& x, DimArgs kind, const Stack& args, ScalarType out_dtype,
                        const std::function<double(const Group&)>& fn) {
  std::vector<int64_t> dims;
  bool keepdim = false;
  if (kind == DimArgs::List) dims = args[0].to_int_list();
  if ((kind == DimArgs::Single || kind == DimArgs::Optional) && !args[0].is_none()) {
    dims = {args[0].to_int()};
  }
  if (kind != DimArgs::None) keepdim = args[1].to_bool();
  // A 0-dim tensor reduced over "dim 0" is reduced over its only value.
  if (x.dim() == 0) dims.clear();
  return reduce_values(x, dims, keepdim, out_dtype, fn);
}

// ---- references over one group's values, in row-major order ----
double ref_sum(const Group& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double ref_mean(const Group& v) { return ref_sum(v) / static_cast<double>(v.size()); }
double ref_prod(const Group& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}
// Position of the first max (kMax) or min, the first NaN winning.
template <bool kMax>
double ref_arg_extremum(const Group& v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size() && !std::isnan(v[best]); ++i) {
    if (std::isnan(v[i]) || (kMax ? v[i] > v[best] : v[i] < v[best])) best = i;
  }
  return static_cast<double>(best);
}
template <bool kMax>
double ref_extremum(const Group& v) {
  return v[static_cast<size_t>(ref_arg_extremum<kMax>(v))];
}
double ref_logsumexp(const Group& v) {
  double m = -kInf;
  for (double x : v) {
    if (std::isnan(x)) return kNaN;
    m = std::max(m, x);
  }
  if (std::isinf(m)) return m;  // some +inf, or only -inf (or no values)
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}
double ref_var(const Group& v, int64_t correction) {
  const double mean = ref_mean(v);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / std::max(0.0, static_cast<double>(static_cast<int64_t>(v.size()) - correction));
}
double ref_norm(const Group& v, double p) {
  double acc = 0;
  for (double x : v) {
    if (std::isnan(x)) return kNaN;
    acc = std::isinf(p) ? std::max(acc, std::abs(x)) : acc + std::pow(std::abs(x), p);
  }
  return std::isinf(p) ? acc : std::pow(acc, 1 / p);
}

ScalarType widened(ScalarType t) { return is_floating_point(t) ? t : kInt64; }
ScalarType same(ScalarType t) { return t; }

using ReductionFn = std::function<Tensor(const Tensor&, const Stack&)>;

// An entry whose op returns one tensor: fn folded over each group, in
// out_dtype(input dtype).
OpInfo value_entry(std::string name, std::vector<ScalarType> dtypes, SampleOptions options,
                   ReductionFn op, std::function<double(const Group&)> fn,
                   ScalarType (*out_dtype)(ScalarType) = &same) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = [options](ScalarType dtype) { return reduction_samples(dtype, options); };
  info.op = [op](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{op(in[0], args)};
  };
  info.reference = [options, fn, out_dtype](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{
        reference_reduce(in[0], options.dim_args, args, out_dtype(in[0].dtype()), fn)};
  };
  return info;
}

std::vector<int64_t> dims_of(const Stack& args) { return args[0].to_int_list(); }
bool keepdim_of(const Stack& args) { return args[1].to_bool(); }

// max.dim and min.dim: values and the indices of their first occurrence.
template <bool kMax>
OpInfo extremum_dim_entry(std::string name) {
  static constexpr SampleOptions options{DimArgs::Single, true};
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [](ScalarType dtype) { return reduction_samples(dtype, options); };
  info.op = [](const std::vector<Tensor>& in, const Stack& args) {
    auto [values, indices] = kMax ? in[0].max(args[0].to_int(), keepdim_of(args))
                                  : in[0].min(args[0].to_int(), keepdim_of(args));
    return std::vector<Tensor>{values, indices};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& args) {
    const Tensor& x = in[0];
    return std::vector<Tensor>{
        reference_reduce(x, options.dim_args, args, x.dtype(), &ref_extremum<kMax>),
        reference_reduce(x, options.dim_args, args, kInt64, &ref_arg_extremum<kMax>)};
  };
  return info;
}

// A group that attains its max or min more than once (an expanded input reduced
// along its stride-0 dim) is a kink of max and min, and a constant group one of
// std: there the op has no derivative. Finite differences see 1/2 for each tied
// element, where any gradient adds up to 1 (ours splits it evenly, max.dim
// gives it to the index; the tangent agrees), and the gradient jumps next to
// the kink. Finite differences move values by a few eps = 1e-6 (along random
// directions), so a value within kNearTie of the extremum is as good as a tie
// (large groups have such near ties).
using KinkTest = std::function<bool(const Group&)>;
constexpr double kNearTie = 1e-5;

template <bool kMax>
bool extremum_tied(const Group& v) {
  const double e = ref_extremum<kMax>(v);
  return std::count_if(v.begin(), v.end(),
                       [&](double x) { return x == e || std::abs(x - e) <= kNearTie; }) > 1;
}
bool abs_max_tied(const Group& v) {
  Group abs(v.size());
  std::transform(v.begin(), v.end(), abs.begin(), [](double x) { return std::abs(x); });
  return extremum_tied<true>(abs);
}
bool constant_group(const Group& v) {
  return v.size() > 1 && std::all_of(v.begin(), v.end(), [&](double x) { return x == v[0]; });
}

// Splits the samples at a kink off into an entry "<name>(ties)" of their own,
// still checked forward, whose derivative checks (reverse and forward mode,
// first and second order) must fail.
std::vector<OpInfo> split_at_kinks(OpInfo info, DimArgs kind, KinkTest at_kink) {
  auto at_a_kink = [kind, at_kink](const Sample& s) {
    const Tensor kinks = reference_reduce(s.inputs[0], kind, s.args, kFloat64,
                                          [&](const Group& g) { return at_kink(g) ? 1.0 : 0.0; });
    const std::vector<double> flags = kinks.to_vector<double>();
    return std::count(flags.begin(), flags.end(), 1.0) > 0;
  };
  auto samples_where = [all = info.samples, at_a_kink](bool kinked) {
    return [=](ScalarType dtype) {
      std::vector<Sample> kept;
      for (Sample& s : all(dtype)) {
        if (at_a_kink(s) == kinked) kept.push_back(std::move(s));
      }
      return kept;
    };
  };
  OpInfo ties = info;
  ties.name += "(ties)";
  ties.samples = samples_where(true);
  for (Check check : {Check::Grad, Check::GradGrad, Check::Jvp, Check::JvpGrad}) {
    ties.expected_failures.push_back(
        {check, std::nullopt,
         "every sample is at a kink (tied values), where no derivative exists"});
  }
  info.samples = samples_where(false);
  return {std::move(info), std::move(ties)};
}

// Index outputs have no derivative.
OpInfo not_differentiable(OpInfo info) {
  info.differentiable = false;
  info.forward_ad = false;
  info.twice_differentiable = false;
  return info;
}

STRATA_OP_INFOS(reduction) {
  constexpr SampleOptions list{DimArgs::List};
  constexpr SampleOptions all{DimArgs::None};
  constexpr SampleOptions list_nonempty{DimArgs::List, true};
  constexpr SampleOptions all_nonempty{DimArgs::None, true};
  constexpr SampleOptions optional_nonempty{DimArgs::Optional, true};
  const auto& floating = floating_dtypes();
  std::vector<OpInfo> infos;
  infos.push_back(value_entry(
      "sum", all_dtypes(), list,
      [](const Tensor& x, const Stack& a) { return x.sum(dims_of(a), keepdim_of(a)); }, &ref_sum,
      &widened));
  infos.push_back(value_entry(
      "sum(all)", all_dtypes(), all, [](const Tensor& x, const Stack&) { return x.sum(); },
      &ref_sum, &widened));
  infos.push_back(value_entry(
      "mean", floating, list,
      [](const Tensor& x, const Stack& a) { return x.mean(dims_of(a), keepdim_of(a)); },
      &ref_mean));
  infos.push_back(value_entry(
      "mean(all)", floating, all, [](const Tensor& x, const Stack&) { return x.mean(); },
      &ref_mean));
  infos.push_back(value_entry(
      "prod(all)", all_dtypes(), {DimArgs::None, false, true, true},
      [](const Tensor& x, const Stack&) { return x.prod(); }, &ref_prod, &widened));
  infos.push_back(value_entry(
      "prod.dim", all_dtypes(), {DimArgs::Single, false, true, true},
      [](const Tensor& x, const Stack& a) { return x.prod(a[0].to_int(), keepdim_of(a)); },
      &ref_prod, &widened));
  auto add = [&infos](std::vector<OpInfo> entries) {
    for (OpInfo& info : entries) infos.push_back(std::move(info));
  };
  add(split_at_kinks(
      value_entry(
          "amax", all_dtypes(), list_nonempty,
          [](const Tensor& x, const Stack& a) { return x.amax(dims_of(a), keepdim_of(a)); },
          &ref_extremum<true>),
      DimArgs::List, &extremum_tied<true>));
  add(split_at_kinks(
      value_entry(
          "amin", all_dtypes(), list_nonempty,
          [](const Tensor& x, const Stack& a) { return x.amin(dims_of(a), keepdim_of(a)); },
          &ref_extremum<false>),
      DimArgs::List, &extremum_tied<false>));
  add(split_at_kinks(
      value_entry(
          "max(all)", all_dtypes(), all_nonempty,
          [](const Tensor& x, const Stack&) { return x.max(); }, &ref_extremum<true>),
      DimArgs::None, &extremum_tied<true>));
  add(split_at_kinks(
      value_entry(
          "min(all)", all_dtypes(), all_nonempty,
          [](const Tensor& x, const Stack&) { return x.min(); }, &ref_extremum<false>),
      DimArgs::None, &extremum_tied<false>));
  add(split_at_kinks(extremum_dim_entry<true>("max.dim"), DimArgs::Single, &extremum_tied<true>));
  add(split_at_kinks(extremum_dim_entry<false>("min.dim"), DimArgs::Single, &extremum_tied<false>));
  auto optional_dim = [](const Stack& a) {
    return a[0].is_none() ? std::nullopt : std::optional<int64_t>(a[0].to_int());
  };
  infos.push_back(not_differentiable(value_entry(
      "argmax", all_dtypes(), optional_nonempty,
      [=](const Tensor& x, const Stack& a) { return x.argmax(optional_dim(a), keepdim_of(a)); },
      &ref_arg_extremum<true>, [](ScalarType) { return kInt64; })));
  infos.push_back(not_differentiable(value_entry(
      "argmin", all_dtypes(), optional_nonempty,
      [=](const Tensor& x, const Stack& a) { return x.argmin(optional_dim(a), keepdim_of(a)); },
      &ref_arg_extremum<false>, [](ScalarType) { return kInt64; })));
  infos.push_back(value_entry(
      "logsumexp", floating, list,
      [](const Tensor& x, const Stack& a) { return x.logsumexp(dims_of(a), keepdim_of(a)); },
      &ref_logsumexp));
  for (int64_t correction : {1, 0, 2}) {
    const std::string suffix =
        correction == 1 ? "" : "(correction=" + std::to_string(correction) + ")";
    infos.push_back(value_entry(
        "var" + suffix, floating, list,
        [=](const Tensor& x, const Stack& a) {
          return x.var(dims_of(a), correction, keepdim_of(a));
        },
        [=](const Group& v) { return ref_var(v, correction); }));
    add(split_at_kinks(value_entry(
                           "std" + suffix, floating, list,
                           [=](const Tensor& x, const Stack& a) {
                             return x.std(dims_of(a), correction, keepdim_of(a));
                           },
                           [=](const Group& v) { return std::sqrt(ref_var(v, correction)); }),
                       DimArgs::List, &constant_group));
  }
  for (double p : {2.0, 1.0, kInf}) {
    const std::string name = p == 2.0 ? "norm" : p == 1.0 ? "norm(p=1)" : "norm(p=inf)";
    OpInfo info = value_entry(
        name, floating, std::isinf(p) ? list_nonempty : list,
        [=](const Tensor& x, const Stack& a) { return x.norm(p, dims_of(a), keepdim_of(a)); },
        [=](const Group& v) { return ref_norm(v, p); });
    if (std::isinf(p)) {
      add(split_at_kinks(std::move(info), DimArgs::List, &abs_max_tied));
    } else {
      infos.push_back(std::move(info));
    }
  }
  return infos;
}

}  // namespace
}  // namespace strata::testing
