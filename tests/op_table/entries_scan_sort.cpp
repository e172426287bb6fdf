// Op-table entries: cumsum, sort, topk (ops/scan_sort.cpp) and nn::pad
// (ops/pad.cpp). The references walk each lane of values read back as doubles.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"
#include "tests/op_table/shape_reference.h"

namespace strata::testing {
namespace {

using L = Layout;
using Ints = std::vector<int64_t>;

struct LaneCase {
  Ints sizes;
  Layout layout;
  int64_t dim;
};

// With distinct_lanes, no lane runs along an expanded dim (its values would all
// tie, and a sort of ties has no derivative for the checks to compare).
std::vector<LaneCase> lane_cases(bool distinct_lanes = false) {
  std::vector<LaneCase> cases{{{5}, L::Contiguous, 0},      {{3, 4}, L::Contiguous, 1},
          {{3, 4}, L::Contiguous, 0},   {{3, 4}, L::Contiguous, -1},
          {{2, 3, 4}, L::Contiguous, 1}, {{}, L::Contiguous, 0},
          {{}, L::Contiguous, -1},      {{0, 3}, L::Contiguous, 0},
          {{3, 0}, L::Contiguous, 1},   {{1, 6}, L::Contiguous, 1},
          {{3, 4}, L::Transposed, 1},   {{3, 4}, L::Sliced, 0},
          {{3, 4}, L::Expanded, 0},     {{2, 3, 4}, L::Transposed, 2},
          {{40, 300}, L::Contiguous, 1}};
  if (distinct_lanes) {
    std::erase_if(cases, [](const LaneCase& c) { return c.layout == L::Expanded && c.dim == 0; });
  }
  return cases;
}

// make_tensor's values, except that with `distinct` a large case holds distinct
// values at least 4 / numel apart (random values in a lane of 300 come closer
// than the finite-difference step, and a sort's derivative jumps where two swap).
Tensor lane_input(const LaneCase& c, ScalarType dtype, bool distinct) {
  const int64_t n =
      std::accumulate(c.sizes.begin(), c.sizes.end(), int64_t{1}, std::multiplies<>());
  if (!distinct || n < 1000 || !is_floating_point(dtype)) {
    return make_tensor(c.sizes, dtype, c.layout);
  }
  std::vector<double> values;
  for (int64_t i = 0; i < n; ++i) {
    values.push_back(-2.0 + 4.0 * static_cast<double>((i * 7919) % n) / static_cast<double>(n));
  }
  return from_values(values, c.sizes, dtype);
}

// One sample per lane case (args: the dim), or two with a flag after the dim
// (sort's descending: false, true).
std::vector<Sample> lane_samples(ScalarType dtype, bool with_flag) {
  std::vector<Sample> samples;
  for (const LaneCase& c : lane_cases(/*distinct_lanes=*/with_flag)) {
    for (bool flag : {false, true}) {
      if (flag && !with_flag) continue;
      std::ostringstream description;
      description << ShapeCase{c.sizes, c.layout}.description() << " dim " << c.dim
                  << (flag ? " descending" : "");
      Stack args{IValue(c.dim)};
      if (with_flag) args.push_back(IValue(flag));
      samples.push_back({description.str(), {lane_input(c, dtype, with_flag)}, args});
    }
  }
  return samples;
}

// Calls f(lane positions) for every lane of `sizes` along dim d; a 0-dim tensor is
// one lane of one element.
void for_each_lane(const Ints& sizes, int64_t d,
                   const std::function<void(const std::vector<Index>&)>& f) {
  if (sizes.empty()) return f({Index{}});
  Ints outer = sizes;
  outer[static_cast<size_t>(d)] = 1;
  for_each_index(outer, [&](const Index& start) {
    std::vector<Index> lane;
    for (int64_t k = 0; k < sizes[static_cast<size_t>(d)]; ++k) {
      Index i = start;
      i[static_cast<size_t>(d)] = k;
      lane.push_back(i);
    }
    f(lane);
  });
}

Tensor cumsum_reference(const Tensor& x, int64_t dim) {
  const HostArray in = HostArray::of(x);
  std::vector<double> out(in.values.size());
  const ScalarType dtype = is_floating_point(x.dtype()) ? x.dtype() : kInt64;
  for_each_lane(in.sizes, wrap_reference_dim(dim, x.dim()), [&](const std::vector<Index>& lane) {
    double total = 0;
    for (const Index& i : lane) {
      const size_t at = static_cast<size_t>(ravel(i, in.sizes));
      total += in.values[at];
      out[at] = total;
    }
  });
  return from_values(out, in.sizes, dtype);
}

// A stable sort of each lane (NaN as the largest value), its first k values and
// their positions; k < 0 keeps the whole lane.
std::vector<Tensor> sort_reference(const Tensor& x, int64_t dim, bool descending, int64_t k) {
  const HostArray in = HostArray::of(x);
  const int64_t d = wrap_reference_dim(dim, x.dim());
  Ints sizes = in.sizes;
  if (k >= 0 && !sizes.empty()) sizes[static_cast<size_t>(d)] = k;
  std::vector<double> values(static_cast<size_t>(std::accumulate(
      sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>())));
  std::vector<double> indices(values.size());
  auto before = [](double a, double b) { return a < b || (!std::isnan(a) && std::isnan(b)); };
  for_each_lane(in.sizes, d, [&](const std::vector<Index>& lane) {
    std::vector<int64_t> order(lane.size());
    std::iota(order.begin(), order.end(), 0);
    auto at = [&](int64_t j) {
      return in.values[static_cast<size_t>(ravel(lane[static_cast<size_t>(j)], in.sizes))];
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return descending ? before(at(b), at(a)) : before(at(a), at(b));
    });
    // A 0-dim tensor keeps its one value whatever k is, as in PyTorch.
    const size_t keep = k >= 0 && !in.sizes.empty() ? static_cast<size_t>(k) : lane.size();
    for (size_t j = 0; j < keep; ++j) {
      const size_t to = static_cast<size_t>(ravel(lane[j], sizes));
      values[to] = at(order[j]);
      indices[to] = static_cast<double>(order[j]);
    }
  });
  return {from_values(values, sizes, x.dtype()), from_values(indices, sizes, kInt64)};
}

OpInfo cumsum_entry() {
  OpInfo info;
  info.name = "cumsum";
  info.dtypes = all_dtypes();
  info.samples = [](ScalarType dtype) { return lane_samples(dtype, false); };
  info.op = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{in[0].cumsum(a[0].to_int())};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{cumsum_reference(in[0], a[0].to_int())};
  };
  // Float32 running sums of 300 terms round differently from the double reference.
  info.tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};
  return info;
}

// Ties (Int64 and Bool samples have many) must keep their order; a NaN goes last
// (first when descending).
std::vector<Sample> sort_samples(ScalarType dtype) {
  std::vector<Sample> samples = lane_samples(dtype, true);
  if (is_floating_point(dtype)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (bool descending : {false, true}) {
      samples.push_back({"[6] with NaN", {from_values({1, nan, -1, 2, nan, 0}, {6}, dtype)},
                         {IValue(int64_t{0}), IValue(descending)}});
    }
  }
  return samples;
}

OpInfo sort_entry() {
  OpInfo info;
  info.name = "sort";
  info.dtypes = all_dtypes();
  info.samples = &sort_samples;
  info.op = [](const std::vector<Tensor>& in, const Stack& a) {
    auto [values, indices] = in[0].sort(a[0].to_int(), a[1].to_bool());
    return std::vector<Tensor>{values, indices};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    return sort_reference(in[0], a[0].to_int(), a[1].to_bool(), -1);
  };
  return info;
}

OpInfo topk_entry() {
  OpInfo info;
  info.name = "topk";
  info.dtypes = all_dtypes();
  // args: dim, k, largest; k is at most the smallest lane of the cases it runs on.
  info.samples = [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const LaneCase& c : lane_cases(/*distinct_lanes=*/true)) {
      const int64_t rank = static_cast<int64_t>(c.sizes.size());
      const int64_t size =
          rank == 0 ? 1 : c.sizes[static_cast<size_t>(wrap_reference_dim(c.dim, rank))];
      for (int64_t k : {int64_t{0}, std::min<int64_t>(size, 2), size}) {
        for (bool largest : {true, false}) {
          std::ostringstream description;
          description << ShapeCase{c.sizes, c.layout}.description() << " dim " << c.dim << " k "
                      << k << (largest ? " largest" : " smallest");
          samples.push_back({description.str(), {lane_input(c, dtype, true)},
                             {IValue(c.dim), IValue(k), IValue(largest)}});
        }
      }
    }
    return samples;
  };
  info.op = [](const std::vector<Tensor>& in, const Stack& a) {
    auto [values, indices] = in[0].topk(a[1].to_int(), a[0].to_int(), a[2].to_bool());
    return std::vector<Tensor>{values, indices};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    return sort_reference(in[0], a[0].to_int(), a[2].to_bool(), a[1].to_int());
  };
  return info;
}

struct PadCase {
  Ints sizes;
  Layout layout;
  Ints pad;
};

// x padded with `value` (cropped where an amount is negative), by mapping each
// output position back to x.
Tensor pad_reference(const Tensor& x, const Ints& pad, double value) {
  const HostArray in = HostArray::of(x);
  Ints sizes = in.sizes;
  const size_t pairs = pad.size() / 2;
  for (size_t k = 0; k < pairs; ++k) {
    sizes[sizes.size() - 1 - k] += pad[2 * k] + pad[2 * k + 1];
  }
  std::vector<double> out;
  for_each_index(sizes, [&](const Index& i) {
    Index source = i;
    bool inside = true;
    for (size_t k = 0; k < pairs; ++k) {
      const size_t d = sizes.size() - 1 - k;
      source[d] -= pad[2 * k];
      inside &= source[d] >= 0 && source[d] < in.sizes[d];
    }
    out.push_back(inside ? in.values[static_cast<size_t>(ravel(source, in.sizes))] : value);
  });
  return from_values(out, sizes, x.dtype());
}

OpInfo pad_entry() {
  const std::vector<PadCase> cases{
      {{3, 4}, L::Contiguous, {1, 2}},
      {{3, 4}, L::Contiguous, {1, 0, 0, 2}},
      {{2, 3, 4}, L::Contiguous, {2, 1, 1, 1, 1, 0}},
      {{3, 4}, L::Contiguous, {-1, 2}},
      {{3, 4}, L::Contiguous, {0, -2, -1, 1}},
      {{3, 4}, L::Contiguous, {-4, 1}},
      {{5}, L::Contiguous, {0, 0}},
      {{3, 4}, L::Contiguous, {}},
      {{0, 3}, L::Contiguous, {1, 1, 2, 0}},
      {{3, 4}, L::Transposed, {1, 1, 1, 1}},
      {{3, 4}, L::Sliced, {2, -1}},
      {{3, 4}, L::Expanded, {0, 1, 1, 0}},
      {{30, 200}, L::Contiguous, {3, 5, 2, 2}},
  };
  OpInfo info;
  info.name = "nn::pad";
  info.dtypes = all_dtypes();
  info.samples = [cases](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const PadCase& c : cases) {
      for (double value : {0.0, 1.0}) {
        samples.push_back({ShapeCase{c.sizes, c.layout}.description() + " pad " +
                               shape_string(c.pad) + " value " + std::to_string(value),
                           {make_tensor(c.sizes, dtype, c.layout)},
                           {IValue(c.pad), IValue(value)}});
      }
    }
    return samples;
  };
  info.op = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{nn::pad(in[0], a[0].to_int_list(), "constant", a[1].to_double())};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{pad_reference(in[0], a[0].to_int_list(), a[1].to_double())};
  };
  return info;
}

STRATA_OP_INFOS(scan_sort) {
  return {cumsum_entry(), sort_entry(), topk_entry(), pad_entry()};
}

}  // namespace
}  // namespace strata::testing
