// Op-table entries: index, index_put (and index_put_) with Int64 indices and Bool
// masks, masked_select (ops/index_put.cpp). The reference turns each index into
// the row-major positions it selects and walks them with plain loops.
//
// A mask that differs per sample gives each sample a different number of
// elements, so vmap raises for it: the Bool entries expect their vmap check
// (which batches every input, masks included) to fail.
#include <optional>
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

// PyTorch's rule written out per dim of x: each dim is sliced (an undefined
// entry, or one past the entries) or read at one coordinate array over the
// positions (a mask gives the coordinates of its true elements, one array per
// dim it covers). The positions stand where the indexed dims were when those
// are adjacent, and first when a sliced dim separates them.
Selection select_reference(const Ints& self_sizes, const std::vector<Tensor>& indices) {
  std::vector<std::optional<HostArray>> per_dim;
  for (const Tensor& index : indices) {
    if (!index.defined()) {
      per_dim.emplace_back();
      continue;
    }
    const HostArray values = HostArray::of(index);
    if (index.dtype() != kBool) {
      per_dim.emplace_back(values);
      continue;
    }
    const size_t dims = std::max<size_t>(values.sizes.size(), 1);
    std::vector<std::vector<double>> coordinates(dims);
    for_each_index(values.sizes, [&](const Index& i) {
      if (values.values[static_cast<size_t>(ravel(i, values.sizes))] == 0) return;
      for (size_t d = 0; d < dims; ++d) coordinates[d].push_back(i.empty() ? 0.0 : double(i[d]));
    });
    for (auto& v : coordinates) {
      const int64_t n = static_cast<int64_t>(v.size());
      per_dim.emplace_back(HostArray{{n}, std::move(v)});
    }
  }
  const Ints sizes_or_one = self_sizes.empty() ? Ints{1} : self_sizes;
  per_dim.resize(sizes_or_one.size());
  std::vector<std::vector<int64_t>> shapes;
  std::vector<size_t> indexed;
  for (size_t d = 0; d < per_dim.size(); ++d) {
    if (!per_dim[d]) continue;
    shapes.push_back(per_dim[d]->sizes);
    indexed.push_back(d);
  }
  const Ints positions = broadcast_sizes(shapes);
  const bool adjacent = indexed.empty() || indexed.back() - indexed.front() + 1 == indexed.size();
  // The result's dims in order: a sliced dim of x, or -1 for the positions.
  std::vector<int64_t> slots;
  const size_t first = indexed.empty() ? per_dim.size() : indexed.front();
  for (size_t d = 0; d < per_dim.size(); ++d) {
    if (adjacent && d == first) slots.push_back(-1);
    if (!per_dim[d]) slots.push_back(static_cast<int64_t>(d));
  }
  if (!adjacent) slots.insert(slots.begin(), -1);
  if (adjacent && first == per_dim.size()) slots.push_back(-1);
  Selection out;
  for (int64_t slot : slots) {
    if (slot < 0) out.sizes.insert(out.sizes.end(), positions.begin(), positions.end());
    if (slot >= 0) out.sizes.push_back(sizes_or_one[static_cast<size_t>(slot)]);
  }
  for_each_index(out.sizes, [&](const Index& o) {
    Index at(per_dim.size(), 0);
    Index p;
    size_t k = 0;
    for (int64_t slot : slots) {
      if (slot >= 0) {
        at[static_cast<size_t>(slot)] = o[k++];
        continue;
      }
      p.assign(o.begin() + static_cast<std::ptrdiff_t>(k),
               o.begin() + static_cast<std::ptrdiff_t>(k + positions.size()));
      k += positions.size();
    }
    for (size_t d : indexed) {
      const int64_t v = static_cast<int64_t>(per_dim[d]->at_broadcast(p));
      at[d] = v < 0 ? v + sizes_or_one[d] : v;
    }
    out.offsets.push_back(ravel(at, sizes_or_one));
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

// An index: Int64 values (listed, or make_index's with repeats below `bound`), a
// Bool mask of make_tensor's alternating values, or a full slice (kSlice).
struct IndexSpec {
  Ints sizes;
  std::vector<double> values = {};  // Int64 values; empty: make_index's
  int64_t bound = 0;                // for make_index; 0: a Bool mask; -1: a slice
};
const IndexSpec kSlice{{}, {}, -1};

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

// inputs: self[, values], the index tensors...; args: [accumulate,] the entries
// that are slices (undefined Tensors, which a sample's inputs cannot hold).
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
    std::vector<int64_t> slices;
    for (const IndexSpec& spec : c.indices) {
      if (spec.bound < 0) {
        slices.push_back(static_cast<int64_t>(&spec - c.indices.data()));
        description << " :";
        continue;
      }
      sample.inputs.push_back(make_index_tensor(spec, seed++));
      description << (spec.bound == 0 && spec.values.empty() ? " mask " : " index ")
                  << shape_string(spec.sizes);
    }
    sample.args.push_back(IValue(std::move(slices)));
    sample.description = description.str();
    samples.push_back(std::move(sample));
  }
  return samples;
}

// The indices: the inputs from `from` on, with an undefined Tensor at each of
// the sample's slice entries.
std::vector<Tensor> tail(const std::vector<Tensor>& in, size_t from, const IValue& slices) {
  std::vector<Tensor> out;
  auto next = in.begin() + static_cast<std::ptrdiff_t>(from);
  for (int64_t slice : slices.to_int_list()) {
    while (static_cast<int64_t>(out.size()) < slice) out.push_back(*next++);
    out.emplace_back();
  }
  out.insert(out.end(), next, in.end());
  return out;
}

OpInfo index_entry(std::string name, std::vector<IndexCase> cases) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [cases](ScalarType dtype) { return index_samples(cases, dtype, std::nullopt); };
  info.op = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{in[0].index(tail(in, 1, a[0]))};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{index_reference(in[0], tail(in, 1, a[0]))};
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
    return std::vector<Tensor>{in[0].index_put(tail(in, 2, a[1]), in[1], a[0].to_bool())};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{
        index_put_reference(in[0], tail(in, 2, a[1]), in[1], a[0].to_bool())};
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
    self.index_put_(tail(in, 2, a[1]), in[1], a[0].to_bool());
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

// Index tensors past a slice: adjacent ones keep their place (x[:, i], x[:, :, i, j]),
// ones a slice separates go first (x[i, :, j], x[:, i, :, j]).
std::vector<IndexCase> slice_read_cases() {
  const IndexSpec& s = kSlice;
  return {
      {{5, 4}, L::Contiguous, {s, {{3}, {}, 4}}},
      {{2, 3, 4, 5}, L::Contiguous, {s, s, {{2, 1}, {}, 4}, {{3}, {}, 5}}},
      {{4, 3, 5}, L::Contiguous, {{{2}, {}, 4}, s, {{2}, {}, 5}}},
      {{2, 4, 3, 5}, L::Contiguous, {s, {{2, 2}, {}, 4}, s, {{2}, {}, 5}}},
      {{3, 4}, L::Contiguous, {s, {{}, {}, 4}}},
      {{3, 4, 2}, L::Contiguous, {s, {{2, 2}, {}, 4}, s}},
      {{3, 4}, L::Contiguous, {s, {{3}, {-1, 0, -4}}}},
      {{4, 3}, L::Transposed, {s, {{5}, {}, 3}}},
      {{3, 4, 2}, L::Sliced, {{{3}, {}, 3}, s, {{1}, {}, 2}}},
  };
}

// Masks past a slice: adjacent (x[:, m], x[:, m, i]) and separated (x[m, :, i]).
std::vector<IndexCase> slice_mask_read_cases() {
  const IndexSpec& s = kSlice;
  return {
      {{3, 4}, L::Contiguous, {s, {{4}}}},
      {{2, 3, 4}, L::Contiguous, {s, {{3, 4}}}},
      {{2, 3, 4}, L::Contiguous, {s, {{3}}, {{1}, {}, 4}}},
      {{3, 2, 4}, L::Contiguous, {{{3}}, s, {{1}, {}, 4}}},
  };
}

// Without accumulate the positions are distinct.
std::vector<IndexCase> slice_put_cases(bool accumulate) {
  const IndexSpec& s = kSlice;
  std::vector<IndexCase> cases{
      {{3, 5}, L::Contiguous, {s, {{2}, {4, 1}}}, {3, 2}},
      {{3, 5}, L::Contiguous, {s, {{2}, {4, 1}}}, {2}},
      {{4, 3, 5}, L::Contiguous, {{{2}, {0, 3}}, s, {{2}, {1, 4}}}, {2, 3}},
      {{2, 3, 4}, L::Contiguous, {s, s, {{2}, {3, 0}}}, {}},
      {{3, 4, 2}, L::Transposed, {s, {{2}, {2, 1}}, s}, {3, 1, 2}},
  };
  if (accumulate) cases.push_back({{3, 5}, L::Contiguous, {s, {{6}, {}, 5}}, {3, 6}});
  return cases;
}

// x[:, m] = v and x[:, m] += v.
std::vector<IndexCase> slice_mask_put_cases() {
  const IndexSpec& s = kSlice;
  return {
      {{3, 4}, L::Contiguous, {s, {{4}}}, {3, 1}},
      {{2, 3, 4}, L::Contiguous, {s, {{3, 4}}}, {}},
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
  infos.push_back(index_entry("index(slices)", slice_read_cases()));
  infos.push_back(index_entry("index(slices, Bool mask)", slice_mask_read_cases()));
  expect_vmap_to_raise(infos.back(), true);
  for (bool accumulate : {false, true}) {
    const std::string suffix = accumulate ? ", accumulate" : "";
    OpInfo put = index_put_entry("index_put(slices" + suffix + ")", slice_put_cases(accumulate),
                                 accumulate);
    infos.push_back(index_put_inplace_entry(put));
    infos.push_back(std::move(put));
    OpInfo masked = index_put_entry("index_put(slices, Bool mask" + suffix + ")",
                                    slice_mask_put_cases(), accumulate);
    expect_vmap_to_raise(masked, false);
    infos.push_back(index_put_inplace_entry(masked));
    infos.push_back(std::move(masked));
  }
  infos.push_back(masked_select_entry());
  return infos;
}

}  // namespace
}  // namespace strata::testing
