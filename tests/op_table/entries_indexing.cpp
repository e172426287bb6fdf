// Op-table entries: index_select, gather, scatter_add, index_add, masked_fill.
// Index tensors are inputs too (Int64, values from make_index, repeats included),
// so a later vmap check batches them like any tensor argument.
#include <sstream>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"
#include "tests/op_table/shape_reference.h"

namespace strata::testing {
namespace {

using L = Layout;
using Ints = std::vector<int64_t>;

struct IndexCase {
  Ints self_sizes;
  Layout self_layout;
  int64_t dim;
  Ints index_sizes;
  bool strided_index = false;
  Ints source_sizes = {};  // src of scatter_add, source of index_add
  Layout source_layout = L::Contiguous;
};

int64_t size_at(const std::vector<int64_t>& sizes, int64_t dim) {
  return sizes.empty() ? 1 : sizes[static_cast<size_t>(dim)];
}

// inputs: self, index[, source]; args: dim[, alpha].
OpInfo index_entry(std::string name, std::vector<IndexCase> cases, bool with_source,
                   std::optional<Scalar> alpha, OpFunction op, OpFunction reference) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [cases = std::move(cases), with_source, alpha](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const IndexCase& c : cases) {
      Sample sample;
      const Tensor self = make_tensor(c.self_sizes, dtype, c.self_layout);
      const int64_t dim = wrap_reference_dim(c.dim, self.dim());
      const int64_t bound = std::max<int64_t>(size_at(c.self_sizes, dim), 1);
      sample.inputs = {self, make_index(c.index_sizes, bound, 1, c.strided_index)};
      std::ostringstream description;
      description << ShapeCase{c.self_sizes, c.self_layout}.description() << " dim " << c.dim
                  << " index " << shape_string(c.index_sizes)
                  << (c.strided_index ? " strided" : "");
      if (with_source) {
        sample.inputs.push_back(make_tensor(c.source_sizes, dtype, c.source_layout, -2, 2, 2));
        description << " source " << ShapeCase{c.source_sizes, c.source_layout}.description();
      }
      sample.args = {IValue(c.dim)};
      if (alpha) sample.args.push_back(IValue(*alpha));
      sample.description = description.str();
      samples.push_back(std::move(sample));
    }
    return samples;
  };
  info.op = std::move(op);
  info.reference = std::move(reference);
  return info;
}

// Value i of `values` read at a position of index's shape.
int64_t index_at(const HostArray& index, const Index& position) {
  return static_cast<int64_t>(index.values[static_cast<size_t>(ravel(position, index.sizes))]);
}

Tensor index_select_reference(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_reference_dim(dim, self.dim());
  const HostArray positions = HostArray::of(index);
  Ints sizes = self.sizes().vec();
  if (!sizes.empty()) sizes[d] = index.numel();
  return remap_reference(self, sizes, [&](Index i) {
    if (i.empty()) return i;
    i[d] = static_cast<int64_t>(positions.values[static_cast<size_t>(i[d])]);
    return i;
  });
}

Tensor gather_reference(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_reference_dim(dim, self.dim());
  const HostArray positions = HostArray::of(index);
  return remap_reference(self, index.sizes().vec(), [&](Index i) {
    if (!i.empty()) i[d] = index_at(positions, i);
    return i;
  });
}

// self with source[p] added at target(p) for every position p of `over`, in
// row-major order; Bool accumulates with or.
Tensor accumulate_reference(const Tensor& self, const Tensor& source, const Ints& over,
                            double alpha, const std::function<Index(const Index&)>& target) {
  HostArray out = HostArray::of(self);
  const HostArray values = HostArray::of(source);
  for_each_index(over, [&](const Index& p) {
    double& slot = out.values[static_cast<size_t>(ravel(target(p), out.sizes))];
    const double add = alpha * values.values[static_cast<size_t>(ravel(p, values.sizes))];
    slot = self.dtype() == kBool ? double(slot != 0 || add != 0) : slot + add;
  });
  return from_values(out.values, out.sizes, self.dtype());
}

Tensor scatter_add_reference(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& src) {
  const int64_t d = wrap_reference_dim(dim, self.dim());
  const HostArray positions = HostArray::of(index);
  return accumulate_reference(self, src, index.sizes().vec(), 1.0, [&](Index p) {
    if (!p.empty()) p[d] = index_at(positions, p);
    return p;
  });
}

Tensor index_add_reference(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& source, double alpha) {
  const int64_t d = wrap_reference_dim(dim, self.dim());
  const HostArray positions = HostArray::of(index);
  return accumulate_reference(self, source, source.sizes().vec(), alpha, [&](Index p) {
    if (!p.empty()) p[d] = static_cast<int64_t>(positions.values[static_cast<size_t>(p[d])]);
    return p;
  });
}

std::vector<IndexCase> index_list_cases() {
  return {
      {{5}, L::Contiguous, 0, {7}, false, {7}},
      {{4, 3}, L::Contiguous, 0, {5}, false, {5, 3}},
      {{4, 3}, L::Contiguous, 1, {4}, false, {4, 4}},
      {{4, 3}, L::Contiguous, -1, {}, false, {4, 1}},
      {{2, 3, 4}, L::Contiguous, 1, {6}, false, {2, 6, 4}},
      {{}, L::Contiguous, 0, {}, false, {}},
      {{4, 3}, L::Contiguous, 0, {0}, false, {0, 3}},
      {{0, 3}, L::Contiguous, 1, {2}, false, {0, 2}},
      {{4, 3}, L::Transposed, 0, {3}, false, {3, 3}, L::Transposed},
      {{4, 3}, L::Sliced, 1, {5}, true, {4, 5}, L::Sliced},
      {{4, 3}, L::Expanded, 1, {2}, true, {4, 2}, L::Expanded},
      {{400, 100}, L::Contiguous, 0, {500}, false, {500, 100}},
  };
}

std::vector<OpInfo> gather_entries() {
  std::vector<OpInfo> infos;
  infos.push_back(index_entry(
      "index_select", index_list_cases(), false, std::nullopt,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{in[0].index_select(a[0].to_int(), in[1])};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{index_select_reference(in[0], a[0].to_int(), in[1])};
      }));
  infos.push_back(index_entry(
      "gather",
      {{{4, 3}, L::Contiguous, 0, {2, 3}},
       {{4, 3}, L::Contiguous, 1, {4, 5}},
       {{4, 3}, L::Contiguous, -1, {2, 2}},
       {{2, 3, 4}, L::Contiguous, 1, {2, 5, 3}},
       {{2, 3, 4}, L::Contiguous, 2, {1, 3, 4}, true},
       {{}, L::Contiguous, 0, {}},
       {{5}, L::Contiguous, 0, {8}, true},
       {{4, 3}, L::Contiguous, 0, {0, 3}},
       {{4, 3}, L::Transposed, 1, {4, 2}},
       {{4, 3}, L::Sliced, 0, {3, 3}, true},
       {{4, 3}, L::Expanded, 0, {4, 3}},
       {{300, 200}, L::Contiguous, 1, {300, 150}}},
      false, std::nullopt,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{in[0].gather(a[0].to_int(), in[1])};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{gather_reference(in[0], a[0].to_int(), in[1])};
      }));
  return infos;
}

std::vector<OpInfo> scatter_entries() {
  std::vector<OpInfo> infos;
  infos.push_back(index_entry(
      "scatter_add",
      {{{5, 3}, L::Contiguous, 0, {4, 2}, false, {4, 3}},
       {{5, 3}, L::Contiguous, 1, {5, 4}, false, {5, 4}},
       {{2, 3, 4}, L::Contiguous, 2, {2, 3, 6}, false, {2, 3, 6}},
       {{}, L::Contiguous, 0, {}, false, {}},
       {{6}, L::Contiguous, 0, {10}, true, {12}},
       {{5, 3}, L::Contiguous, 0, {0, 3}, false, {2, 3}},
       {{4, 3}, L::Transposed, 1, {4, 3}, false, {4, 3}, L::Transposed},
       {{4, 3}, L::Sliced, 0, {3, 3}, true, {3, 3}, L::Sliced},
       {{4, 3}, L::Contiguous, 0, {4, 3}, false, {4, 3}, L::Expanded},
       {{100, 400}, L::Contiguous, 0, {200, 400}, false, {200, 400}}},
      true, std::nullopt,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{in[0].scatter_add(a[0].to_int(), in[1], in[2])};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{scatter_add_reference(in[0], a[0].to_int(), in[1], in[2])};
      }));
  infos.back().inplace_variant = "scatter_add_";
  for (const Scalar& alpha : {Scalar(1), Scalar(2)}) {
    infos.push_back(index_entry(
        alpha.to_int() == 1 ? "index_add" : "index_add(alpha=2)", index_list_cases(), true, alpha,
        [](const std::vector<Tensor>& in, const Stack& a) {
          return std::vector<Tensor>{
              in[0].index_add(a[0].to_int(), in[1], in[2], a[1].to_scalar())};
        },
        [](const std::vector<Tensor>& in, const Stack& a) {
          return std::vector<Tensor>{index_add_reference(in[0], a[0].to_int(), in[1], in[2],
                                                         a[1].to_scalar().to_double())};
        }));
    infos.back().inplace_variant = "index_add_";
  }
  return infos;
}

struct MaskCase {
  Ints self_sizes;
  Layout self_layout;
  Ints mask_sizes;
  Layout mask_layout = L::Contiguous;
};

// A value each dtype can hold that differs from most of make_tensor's values.
Scalar fill_value(ScalarType dtype) {
  if (dtype == kBool) return Scalar(false);
  if (dtype == kInt64) return Scalar(7);
  return Scalar(-1.5);
}

OpInfo masked_fill_entry() {
  const std::vector<MaskCase> cases{
      {{3, 4}, L::Contiguous, {3, 4}},
      {{3, 4}, L::Contiguous, {3, 1}},
      {{3, 4}, L::Contiguous, {4}},
      {{3, 4}, L::Contiguous, {}},
      {{}, L::Contiguous, {}},
      {{}, L::Contiguous, {2, 3}},
      {{3, 1}, L::Contiguous, {3, 4}},
      {{0, 3}, L::Contiguous, {3}},
      {{3, 4}, L::Transposed, {3, 4}, L::Sliced},
      {{3, 4}, L::Expanded, {3, 4}, L::Transposed},
      {{3, 4}, L::Sliced, {3, 4}, L::Expanded},
      {{200, 300}, L::Contiguous, {200, 300}},
  };
  OpInfo info;
  info.name = "masked_fill";
  info.dtypes = all_dtypes();
  info.inplace_variant = "masked_fill_";
  info.samples = [cases](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const MaskCase& c : cases) {
      samples.push_back({ShapeCase{c.self_sizes, c.self_layout}.description() + " mask " +
                             ShapeCase{c.mask_sizes, c.mask_layout}.description(),
                         {make_tensor(c.self_sizes, dtype, c.self_layout),
                          make_tensor(c.mask_sizes, kBool, c.mask_layout, -2, 2, 1)},
                         {IValue(fill_value(dtype))}});
    }
    return samples;
  };
  info.op = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{in[0].masked_fill(in[1], a[0].to_scalar())};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    const double value = a[0].to_scalar().to_double();
    return std::vector<Tensor>{map_binary(
        in[0], in[1], in[0].dtype(), [value](double x, double m) { return m != 0 ? value : x; })};
  };
  return info;
}

STRATA_OP_INFOS(indexing) {
  std::vector<OpInfo> infos = gather_entries();
  for (OpInfo& info : scatter_entries()) infos.push_back(std::move(info));
  infos.push_back(masked_fill_entry());
  return infos;
}

}  // namespace
}  // namespace strata::testing
