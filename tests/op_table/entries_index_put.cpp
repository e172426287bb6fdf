// Op-table entries: index, index_put (and index_put_) with Int64 indices and Bool
// masks, masked_select (ops/index_put.cpp). The reference turns each index into
// the row-major positions it selects and walks them with plain loops.
//
// A mask that differs per sample gives each sample a different number of
// elements, so vmap raises for it: the Bool entries expect their vmap check
// (which batches every input, masks included) to fail.
#include <sstream>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"
#include "tests/op_table/shape_reference.h"

namespace strata::testing {
namespace {

using L = Layout;
using Ints = std::vector<int64_t>;

// Where x[indices...] reads: the result's sizes and, per result element, the
// row-major offset in x.
struct Selection {
  Ints sizes;
  std::vector<int64_t> offsets;
};

Selection select_reference(const Ints& self_sizes, const std::vector<Tensor>& indices) {
  // Each index as per-dim coordinates over the positions: masks become the
  // coordinates of their true elements, in row-major order.
  std::vector<HostArray> coordinates;
  for (const Tensor& index : indices) {
    const HostArray values = HostArray::of(index);
    if (index.dtype() != kBool) {
      coordinates.push_back(values);
      continue;
    }
    const size_t dims = std::max<size_t>(values.sizes.size(), 1);
    std::vector<std::vector<double>> per_dim(dims);
    for_each_index(values.sizes, [&](const Index& i) {
      if (values.values[static_cast<size_t>(ravel(i, values.sizes))] == 0) return;
      for (size_t d = 0; d < dims; ++d) per_dim[d].push_back(i.empty() ? 0.0 : double(i[d]));
    });
    for (auto& v : per_dim) {
      const int64_t n = static_cast<int64_t>(v.size());
      coordinates.push_back({{n}, std::move(v)});
    }
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const HostArray& c : coordinates) shapes.push_back(c.sizes);
  const Ints positions = broadcast_sizes(shapes);
  const Ints sizes_or_one = self_sizes.empty() ? Ints{1} : self_sizes;
  const Ints block(sizes_or_one.begin() + static_cast<int64_t>(coordinates.size()),
                   sizes_or_one.end());
  Selection out{positions, {}};
  out.sizes.insert(out.sizes.end(), block.begin(), block.end());
  for_each_index(positions, [&](const Index& p) {
    Index at;
    for (size_t k = 0; k < coordinates.size(); ++k) {
      const int64_t size = sizes_or_one[k];
      const int64_t v = static_cast<int64_t>(coordinates[k].at_broadcast(p));
      at.push_back(v < 0 ? v + size : v);
    }
    for_each_index(block, [&](const Index& b) {
      Index full = at;
      full.insert(full.end(), b.begin(), b.end());
      out.offsets.push_back(ravel(full, sizes_or_one));
    });
  });
  return out;
}

Tensor index_reference(const Tensor& self, const std::vector<Tensor>& indices) {
  const HostArray x = HostArray::of(self);
  const Selection s = select_reference(x.sizes, indices);
  std::vector<double> out;
  for (int64_t o : s.offsets) out.push_back(x.values[static_cast<size_t>(o)]);
  return from_values(out, s.sizes, self.dtype());
}

Tensor index_put_reference(const Tensor& self, const std::vector<Tensor>& indices,
                           const Tensor& values, bool accumulate) {
  HostArray x = HostArray::of(self);
  const Selection s = select_reference(x.sizes, indices);
  const HostArray v = HostArray::of(values);
  size_t e = 0;
  for_each_index(s.sizes, [&](const Index& i) {
    double& slot = x.values[static_cast<size_t>(s.offsets[e++])];
    const double value = v.at_broadcast(i);
    if (!accumulate) {
      slot = value;
    } else {
      slot = self.dtype() == kBool ? double(slot != 0 || value != 0) : slot + value;
    }
  });
  return from_values(x.values, x.sizes, self.dtype());
}

// An index: Int64 values (listed, or make_index's with repeats below `bound`), or
// a Bool mask of make_tensor's alternating values.
struct IndexSpec {
  Ints sizes;
  std::vector<double> values = {};  // Int64 values; empty: make_index's
  int64_t bound = 0;                // for make_index; 0: a Bool mask
};

struct IndexCase {
  Ints self_sizes;
  Layout layout;
  std::vector<IndexSpec> indices;
  Ints values_sizes = {};  // index_put's values
};

Tensor make_index_tensor(const IndexSpec& spec, uint64_t seed) {
  if (spec.bound == 0 && spec.values.empty()) {
    return make_tensor(spec.sizes, kBool, L::Contiguous, -2, 2, seed);
  }
  if (!spec.values.empty()) return from_values(spec.values, spec.sizes, kInt64);
  return make_index(spec.sizes, spec.bound, seed);
}

// inputs: self[, values], indices...; args: [accumulate].
std::vector<Sample> index_samples(const std::vector<IndexCase>& cases, ScalarType dtype,
                                  std::optional<bool> accumulate) {
  std::vector<Sample> samples;
  for (const IndexCase& c : cases) {
    Sample sample;
    std::ostringstream description;
    description << ShapeCase{c.self_sizes, c.layout}.description();
    sample.inputs.push_back(make_tensor(c.self_sizes, dtype, c.layout));
    if (accumulate) {
      sample.inputs.push_back(make_tensor(c.values_sizes, dtype, L::Contiguous, -2, 2, 3));
      description << " values " << shape_string(c.values_sizes);
      sample.args.push_back(IValue(*accumulate));
    }
    uint64_t seed = 1;
    for (const IndexSpec& spec : c.indices) {
      sample.inputs.push_back(make_index_tensor(spec, seed++));
      description << (spec.bound == 0 && spec.values.empty() ? " mask " : " index ")
                  << shape_string(spec.sizes);
    }
    sample.description = description.str();
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::vector<Tensor> tail(const std::vector<Tensor>& in, size_t from) {
  return {in.begin() + static_cast<std::ptrdiff_t>(from), in.end()};
}

OpInfo index_entry(std::string name, std::vector<IndexCase> cases) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [cases](ScalarType dtype) { return index_samples(cases, dtype, std::nullopt); };
  info.op = [](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{in[0].index(tail(in, 1))};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{index_reference(in[0], tail(in, 1))};
  };
  return info;
}

OpInfo index_put_entry(std::string name, std::vector<IndexCase> cases, bool accumulate) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.inplace_variant = "index_put_";
  info.samples = [cases, accumulate](ScalarType dtype) {
    return index_samples(cases, dtype, accumulate);
  };
  info.op = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{in[0].index_put(tail(in, 2), in[1], a[0].to_bool())};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{index_put_reference(in[0], tail(in, 2), in[1], a[0].to_bool())};
  };
  return info;
}

// A copy of self to write into in place: batched whenever another input is
// (inside vmap, an unbatched self cannot take per-sample values).
Tensor in_place_target(const std::vector<Tensor>& in) {
  if (batching::as_batched(in[0]) == nullptr) {
    for (size_t i = 1; i < in.size(); ++i) {
      if (batching::as_batched(in[i]) == nullptr) continue;
      return in[0] + zeros_like(in[i], in[0].dtype()).sum().to(in[0].dtype());
    }
  }
  return in[0].clone();
}

// The in-place form on a copy of self.
OpInfo index_put_inplace_entry(OpInfo info) {
  info.name = "index_put_" + info.name.substr(std::string("index_put").size());
  info.inplace_variant.clear();
  info.op = [](const std::vector<Tensor>& in, const Stack& a) {
    const Tensor self = in_place_target(in);
    self.index_put_(tail(in, 2), in[1], a[0].to_bool());
    return std::vector<Tensor>{self};
  };
  return info;
}

// With its masks batched, vmap raises; vmap∘grad batches only the floating inputs,
// so a mask shared by the samples works there. An op whose output size is the
// mask's count has no shape in fake mode either.
void expect_vmap_to_raise(OpInfo& info, bool output_size_from_mask) {
  const std::string reason = "a Bool mask that differs per sample has a data-dependent size";
  info.expected_failures.push_back({Check::Vmap, std::nullopt, reason});
  info.data_dependent_size = output_size_from_mask;
}

std::vector<IndexCase> int_read_cases() {
  return {
      {{5, 4}, L::Contiguous, {{{3}, {}, 5}}},
      {{5, 4}, L::Contiguous, {{{2, 3}, {}, 5}, {{3}, {}, 4}}},
      {{5, 4}, L::Contiguous, {{{3}, {-1, 0, -5}}}},
      {{3, 4, 2}, L::Contiguous, {{{2, 1}, {}, 3}, {{1, 3}, {}, 4}}},
      {{5}, L::Contiguous, {{{}, {}, 5}}},
      {{5, 4}, L::Contiguous, {{{0}, {}, 5}}},
      {{4, 3}, L::Transposed, {{{2, 2}, {}, 4}}},
      {{4, 3}, L::Sliced, {{{5}, {}, 4}, {{5}, {}, 3}}},
      {{4, 3}, L::Expanded, {{{3}, {}, 4}}},
      {{300, 50}, L::Contiguous, {{{400}, {}, 300}}},
  };
}

std::vector<IndexCase> mask_read_cases() {
  return {
      {{3, 4}, L::Contiguous, {{{3, 4}}}},
      {{3, 4}, L::Contiguous, {{{3}}}},
      {{2, 3, 4}, L::Contiguous, {{{2, 3}}}},
      {{}, L::Contiguous, {{{}}}},
      {{0, 3}, L::Contiguous, {{{0}}}},
      {{3, 4}, L::Transposed, {{{3, 4}}}},
  };
}

// Without accumulate, repeated positions would race: the indices are distinct.
std::vector<IndexCase> put_cases(bool accumulate) {
  std::vector<IndexCase> cases{
      {{5, 4}, L::Contiguous, {{{3}, {3, 0, -1}}}, {3, 4}},
      {{5, 4}, L::Contiguous, {{{3}, {1, 4, 2}}}, {4}},
      {{5, 4}, L::Contiguous, {{{2}, {0, 2}}, {{2}, {3, 1}}}, {2}},
      {{5, 4}, L::Contiguous, {{{2}, {0, 2}}, {{2}, {3, 1}}}, {}},
      {{4, 3}, L::Transposed, {{{2}, {2, 1}}}, {2, 3}},
      {{4, 3}, L::Contiguous, {{{0}, {}, 4}}, {0, 3}},
  };
  if (accumulate) {
    cases.push_back({{5, 4}, L::Contiguous, {{{6}, {}, 5}}, {6, 4}});
    cases.push_back({{200, 30}, L::Contiguous, {{{300}, {}, 200}}, {300, 30}});
  }
  return cases;
}

// x[mask] = v and x[mask] += v.
std::vector<IndexCase> mask_put_cases() {
  return {
      {{3, 4}, L::Contiguous, {{{3, 4}}}, {}},
      {{3, 4}, L::Contiguous, {{{3}}}, {4}},
      {{2, 3, 4}, L::Transposed, {{{2, 3}}}, {4}},
  };
}

OpInfo masked_select_entry() {
  const std::vector<std::pair<ShapeCase, ShapeCase>> cases{
      {{{3, 4}, L::Contiguous}, {{3, 4}, L::Contiguous}},
      {{{3, 4}, L::Contiguous}, {{4}, L::Contiguous}},
      {{{4}, L::Contiguous}, {{3, 4}, L::Contiguous}},
      {{{3, 1}, L::Contiguous}, {{1, 4}, L::Contiguous}},
      {{{}, L::Contiguous}, {{}, L::Contiguous}},
      {{{0, 3}, L::Contiguous}, {{3}, L::Contiguous}},
      {{{3, 4}, L::Transposed}, {{3, 4}, L::Sliced}},
      {{{3, 4}, L::Expanded}, {{3, 4}, L::Contiguous}},
  };
  OpInfo info;
  info.name = "masked_select";
  info.dtypes = all_dtypes();
  info.samples = [cases](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const auto& [self, mask] : cases) {
      samples.push_back({self.description() + " mask " + mask.description(),
                         {make_tensor(self.sizes, dtype, self.layout),
                          make_tensor(mask.sizes, kBool, mask.layout, -2, 2, 1)},
                         {}});
    }
    return samples;
  };
  info.op = [](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{in[0].masked_select(in[1])};
  };
  // x broadcast with the mask, then indexed by the broadcast mask.
  info.reference = [](const std::vector<Tensor>& in, const Stack&) {
    const Ints sizes = broadcast_sizes({in[0].sizes().vec(), in[1].sizes().vec()});
    const Tensor x = map_binary(in[0], in[1], in[0].dtype(), [](double a, double) { return a; });
    const Tensor m = map_binary(in[1], in[0], kBool, [](double a, double) { return a; });
    const Tensor selected = index_reference(x, {m});
    return std::vector<Tensor>{selected.reshape({selected.numel()})};
  };
  expect_vmap_to_raise(info, true);
  return info;
}

STRATA_OP_INFOS(index_put) {
  std::vector<OpInfo> infos;
  infos.push_back(index_entry("index", int_read_cases()));
  infos.push_back(index_entry("index(Bool mask)", mask_read_cases()));
  expect_vmap_to_raise(infos.back(), true);
  for (bool accumulate : {false, true}) {
    const std::string suffix = accumulate ? "(accumulate)" : "";
    OpInfo put = index_put_entry("index_put" + suffix, put_cases(accumulate), accumulate);
    infos.push_back(index_put_inplace_entry(put));
    infos.push_back(std::move(put));
    OpInfo masked = index_put_entry("index_put" + suffix + "(Bool mask)", mask_put_cases(),
                                    accumulate);
    expect_vmap_to_raise(masked, false);
    infos.push_back(index_put_inplace_entry(masked));
    infos.push_back(std::move(masked));
  }
  infos.push_back(masked_select_entry());
  return infos;
}

}  // namespace
}  // namespace strata::testing
