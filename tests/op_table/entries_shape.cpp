// Op-table entries: the view ops. Each reference builds the expected values by
// index arithmetic on the input's row-major values (shape_reference.h).
#include <algorithm>
#include <sstream>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"
#include "tests/op_table/shape_reference.h"

namespace strata::testing {
namespace {

using UnaryFn = std::function<Tensor(const Tensor&, const Stack&)>;

// One input of the given shape and layout, and the op's other arguments.
struct ViewCase {
  std::vector<int64_t> sizes;
  Layout layout;
  Stack args;
};

std::string describe(const ViewCase& c) {
  std::ostringstream out;
  out << ShapeCase{c.sizes, c.layout}.description() << " args";
  for (const IValue& arg : c.args) out << ' ' << arg;
  return out.str();
}

OpInfo view_entry(std::string name, std::vector<ViewCase> cases, UnaryFn op, UnaryFn reference) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [cases = std::move(cases)](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const ViewCase& c : cases) {
      samples.push_back({describe(c), {make_tensor(c.sizes, dtype, c.layout)}, c.args});
    }
    return samples;
  };
  info.op = [op](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{op(in[0], args)};
  };
  info.reference = [reference](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{reference(in[0], args)};
  };
  return info;
}

using L = Layout;
using Ints = std::vector<int64_t>;

Stack args_of(std::initializer_list<IValue> values) { return Stack(values); }

// Output dim i reads input dim perm[i].
Tensor permute_reference(const Tensor& x, const Ints& perm) {
  Ints sizes;
  for (int64_t p : perm) sizes.push_back(x.sizes()[p]);
  return remap_reference(x, sizes, [&](const Index& out) {
    Index in(out.size());
    for (size_t i = 0; i < perm.size(); ++i) in[perm[i]] = out[i];
    return in;
  });
}

Ints identity_perm(int64_t rank) {
  Ints perm(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) perm[d] = d;
  return perm;
}

Tensor transpose_reference(const Tensor& x, int64_t dim0, int64_t dim1) {
  Ints perm = identity_perm(x.dim());
  if (x.dim() > 0)
    std::swap(perm[wrap_reference_dim(dim0, x.dim())], perm[wrap_reference_dim(dim1, x.dim())]);
  return permute_reference(x, perm);
}

// Input index = output index with `value` put back at dim.
Tensor insert_reference(const Tensor& x, const Ints& out_sizes, int64_t dim, int64_t value) {
  return remap_reference(x, out_sizes, [&](Index i) {
    i.insert(i.begin() + dim, value);
    return i;
  });
}

Tensor unsqueeze_reference(const Tensor& x, int64_t dim) {
  const int64_t d = wrap_reference_dim(dim, x.dim() + 1);
  Ints sizes = x.sizes().vec();
  sizes.insert(sizes.begin() + d, 1);
  return remap_reference(x, sizes, [&](Index i) {
    i.erase(i.begin() + d);
    return i;
  });
}

// Drops the size-1 dims: all of them, or only `dim` when given.
Tensor squeeze_reference(const Tensor& x, std::optional<int64_t> dim) {
  std::vector<bool> dropped(static_cast<size_t>(x.dim()), false);
  Ints sizes;
  for (int64_t d = 0; d < x.dim(); ++d) {
    dropped[d] = x.sizes()[d] == 1 && (!dim || wrap_reference_dim(*dim, x.dim()) == d);
    if (!dropped[d]) sizes.push_back(x.sizes()[d]);
  }
  return remap_reference(x, sizes, [&](const Index& out) {
    Index in;
    size_t k = 0;
    for (bool drop : dropped) in.push_back(drop ? 0 : out[k++]);
    return in;
  });
}

Tensor expand_reference(const Tensor& x, const Ints& target) {
  const size_t lead = target.size() - static_cast<size_t>(x.dim());
  Ints sizes = target;
  for (size_t k = lead; k < target.size(); ++k) {
    if (target[k] == -1) sizes[k] = x.sizes()[k - lead];
  }
  return remap_reference(x, sizes, [&](const Index& out) {
    Index in;
    for (size_t k = lead; k < out.size(); ++k) in.push_back(x.sizes()[k - lead] == 1 ? 0 : out[k]);
    return in;
  });
}

Tensor diagonal_reference(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t d1 = wrap_reference_dim(dim1, x.dim()), d2 = wrap_reference_dim(dim2, x.dim());
  const int64_t row0 = std::max<int64_t>(-offset, 0), col0 = std::max<int64_t>(offset, 0);
  int64_t length = 0;
  while (row0 + length < x.sizes()[d1] && col0 + length < x.sizes()[d2]) ++length;
  Ints sizes;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != d1 && d != d2) sizes.push_back(x.sizes()[d]);
  }
  sizes.push_back(length);
  return remap_reference(x, sizes, [&](const Index& out) {
    Index in(static_cast<size_t>(x.dim()));
    size_t k = 0;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (d != d1 && d != d2) in[d] = out[k++];
    }
    in[d1] = row0 + out.back();
    in[d2] = col0 + out.back();
    return in;
  });
}

// For contiguous inputs only: the storage is then the row-major values.
Tensor as_strided_reference(const Tensor& x, const Ints& sizes, const Ints& strides,
                            std::optional<int64_t> offset) {
  const HostArray in = HostArray::of(x);
  std::vector<double> values;
  for_each_index(sizes, [&](const Index& i) {
    int64_t at = offset.value_or(0);
    for (size_t d = 0; d < i.size(); ++d) at += i[d] * strides[d];
    values.push_back(in.values[static_cast<size_t>(at)]);
  });
  return from_values(values, sizes, x.dtype());
}

Tensor slice_reference(const Tensor& x, int64_t dim, std::optional<int64_t> start,
                       std::optional<int64_t> end, int64_t step) {
  const int64_t d = wrap_reference_dim(dim, x.dim());
  const int64_t n = x.sizes()[d];
  auto bound = [n](int64_t b) { return std::min(std::max(b < 0 ? b + n : b, int64_t{0}), n); };
  const int64_t first = bound(start.value_or(0));
  Ints sizes = x.sizes().vec();
  sizes[d] = 0;
  for (int64_t i = first; i < bound(end.value_or(n)); i += step) ++sizes[d];
  return remap_reference(x, sizes, [&](Index i) {
    i[d] = first + i[d] * step;
    return i;
  });
}

std::vector<OpInfo> rearranging_entries() {
  std::vector<OpInfo> infos;
  const std::vector<ViewCase> view_cases{
      {{}, L::Contiguous, args_of({Ints{1}})},
      {{}, L::Contiguous, args_of({Ints{}})},
      {{1}, L::Contiguous, args_of({Ints{}})},
      {{0}, L::Contiguous, args_of({Ints{0, 5}})},
      {{0, 3}, L::Contiguous, args_of({Ints{3, -1}})},
      {{7}, L::Contiguous, args_of({Ints{7, 1}})},
      {{2, 3, 4}, L::Contiguous, args_of({Ints{6, 4}})},
      {{3, 4}, L::Transposed, args_of({Ints{3, 2, 2}})},
      {{3, 4}, L::Transposed, args_of({Ints{1, 3, 4, 1}})},
      {{3, 4}, L::Sliced, args_of({Ints{3, 2, 2}})},
      {{3, 4}, L::Expanded, args_of({Ints{3, 1, 2, 2}})},
      {{2, 3, 4}, L::Transposed, args_of({Ints{2, 3, 2, 2}})},
  };
  // Views that merge a sample's last dim with the one before: under vmap with the
  // batch dim between them, a sample is not evenly strided there.
  const std::vector<ViewCase> merging_view_cases{
      {{3, 4}, L::Contiguous, args_of({Ints{12}})},
      {{3, 4}, L::Contiguous, args_of({Ints{2, -1}})},
      {{2, 3, 4}, L::Contiguous, args_of({Ints{24}})},
  };
  auto view_op = [](const Tensor& x, const Stack& a) { return x.view(int_list_arg(a, 0)); };
  auto view_reference = [](const Tensor& x, const Stack& a) {
    return reshape_reference(x, int_list_arg(a, 0));
  };
  infos.push_back(view_entry("view", view_cases, view_op, view_reference));
  infos.push_back(view_entry("view(merging dims)", merging_view_cases, view_op, view_reference));
  infos.back().expected_failures.push_back(
      {Check::Vmap, std::nullopt,
       "with the batch dim in the middle a sample cannot be viewed so, and the per-sample "
       "reference throws as view must (vmap throws too)"});
  std::vector<ViewCase> reshape_cases = view_cases;
  reshape_cases.insert(reshape_cases.end(), merging_view_cases.begin(), merging_view_cases.end());
  for (ViewCase c : std::vector<ViewCase>{{{3, 4}, L::Transposed, args_of({Ints{12}})},
                                          {{3, 4}, L::Transposed, args_of({Ints{2, 6}})},
                                          {{3, 4}, L::Sliced, args_of({Ints{-1}})},
                                          {{3, 4}, L::Expanded, args_of({Ints{4, 3}})},
                                          {{2, 3, 4}, L::Transposed, args_of({Ints{6, 4}})}}) {
    reshape_cases.push_back(c);
  }
  infos.push_back(view_entry(
      "reshape", reshape_cases,
      [](const Tensor& x, const Stack& a) { return x.reshape(int_list_arg(a, 0)); },
      [](const Tensor& x, const Stack& a) { return reshape_reference(x, int_list_arg(a, 0)); }));
  infos.push_back(view_entry(
      "permute",
      {{{}, L::Contiguous, args_of({Ints{}})},
       {{1}, L::Contiguous, args_of({Ints{0}})},
       {{3, 4}, L::Contiguous, args_of({Ints{1, 0}})},
       {{2, 3, 4}, L::Contiguous, args_of({Ints{2, 0, 1}})},
       {{2, 3, 4}, L::Contiguous, args_of({Ints{-1, 0, 1}})},
       {{0, 3}, L::Contiguous, args_of({Ints{1, 0}})},
       {{2, 3, 4}, L::Transposed, args_of({Ints{1, 2, 0}})},
       {{3, 4}, L::Sliced, args_of({Ints{1, 0}})},
       {{3, 4}, L::Expanded, args_of({Ints{1, 0}})}},
      [](const Tensor& x, const Stack& a) { return x.permute(int_list_arg(a, 0)); },
      [](const Tensor& x, const Stack& a) {
        Ints perm = int_list_arg(a, 0);
        for (int64_t& p : perm) p = wrap_reference_dim(p, x.dim());
        return permute_reference(x, perm);
      }));
  infos.push_back(view_entry(
      "transpose",
      {{{}, L::Contiguous, args_of({0, 0})},
       {{1}, L::Contiguous, args_of({0, -1})},
       {{3, 4}, L::Contiguous, args_of({0, 1})},
       {{2, 3, 4}, L::Contiguous, args_of({0, 2})},
       {{2, 3, 4}, L::Contiguous, args_of({-1, 1})},
       {{0, 3}, L::Contiguous, args_of({0, 1})},
       {{3, 4}, L::Transposed, args_of({1, 0})},
       {{3, 4}, L::Sliced, args_of({0, 1})},
       {{3, 4}, L::Expanded, args_of({0, 1})}},
      [](const Tensor& x, const Stack& a) { return x.transpose(a[0].to_int(), a[1].to_int()); },
      [](const Tensor& x, const Stack& a) {
        return transpose_reference(x, a[0].to_int(), a[1].to_int());
      }));
  infos.push_back(view_entry(
      "t",
      {{{}, L::Contiguous, {}},
       {{1}, L::Contiguous, {}},
       {{7}, L::Contiguous, {}},
       {{3, 4}, L::Contiguous, {}},
       {{0, 3}, L::Contiguous, {}},
       {{3, 4}, L::Transposed, {}},
       {{3, 4}, L::Sliced, {}},
       {{3, 4}, L::Expanded, {}}},
      [](const Tensor& x, const Stack&) { return x.t(); },
      [](const Tensor& x, const Stack&) {
        return transpose_reference(x, 0, x.dim() < 2 ? 0 : 1);
      }));
  infos.push_back(view_entry(
      "movedim",
      {{{}, L::Contiguous, args_of({0, -1})},
       {{3, 4}, L::Contiguous, args_of({0, 1})},
       {{2, 3, 4}, L::Contiguous, args_of({0, 2})},
       {{2, 3, 4}, L::Contiguous, args_of({2, 0})},
       {{2, 3, 4}, L::Contiguous, args_of({-1, 1})},
       {{2, 3, 4}, L::Transposed, args_of({1, 0})},
       {{3, 4}, L::Sliced, args_of({1, 0})},
       {{3, 4}, L::Expanded, args_of({1, 0})}},
      [](const Tensor& x, const Stack& a) { return x.movedim(a[0].to_int(), a[1].to_int()); },
      [](const Tensor& x, const Stack& a) {
        // Output dim `to` is input dim `from`; the other dims keep their order.
        const int64_t from = wrap_reference_dim(a[0].to_int(), x.dim());
        const int64_t to = wrap_reference_dim(a[1].to_int(), x.dim());
        Ints others;
        for (int64_t d = 0; d < x.dim(); ++d) {
          if (d != from) others.push_back(d);
        }
        Ints perm;
        for (int64_t i = 0, k = 0; i < x.dim(); ++i) perm.push_back(i == to ? from : others[k++]);
        return permute_reference(x, perm);
      }));
  infos.push_back(view_entry(
      "unsqueeze",
      {{{}, L::Contiguous, args_of({0})},
       {{}, L::Contiguous, args_of({-1})},
       {{7}, L::Contiguous, args_of({0})},
       {{7}, L::Contiguous, args_of({-1})},
       {{3, 4}, L::Contiguous, args_of({1})},
       {{2, 3, 4}, L::Contiguous, args_of({3})},
       {{0, 3}, L::Contiguous, args_of({1})},
       {{3, 4}, L::Transposed, args_of({0})},
       {{3, 4}, L::Sliced, args_of({2})},
       {{3, 4}, L::Expanded, args_of({-2})}},
      [](const Tensor& x, const Stack& a) { return x.unsqueeze(a[0].to_int()); },
      [](const Tensor& x, const Stack& a) { return unsqueeze_reference(x, a[0].to_int()); }));
  // The values of its input, as a constant to grad and jvp (tests/transforms/grad_test.cpp
  // checks that no gradient or tangent flows through it).
  OpInfo stop = view_entry(
      "stop_gradient",
      {{{}, L::Contiguous, {}},
       {{3, 4}, L::Contiguous, {}},
       {{3, 4}, L::Transposed, {}},
       {{3, 4}, L::Sliced, {}},
       {{3, 4}, L::Expanded, {}}},
      [](const Tensor& x, const Stack&) { return stop_gradient(x); },
      [](const Tensor& x, const Stack&) { return x.clone(); });
  stop.differentiable = false;
  stop.forward_ad = false;
  stop.twice_differentiable = false;
  stop.expected_failures.push_back(
      {Check::Functionalize, std::nullopt,
       "stop_gradient has no scatter form: which gradient crosses a write through it is "
       "stop_gradient's to decide, so functionalize writes the region in a copy of the root "
       "(a copy_ in the graph)"});
  infos.push_back(std::move(stop));
  const std::vector<ViewCase> squeeze_shapes{
      {{}, L::Contiguous, {}},        {{1}, L::Contiguous, {}},       {{7}, L::Contiguous, {}},
      {{1, 3, 1}, L::Contiguous, {}}, {{3, 1, 4}, L::Contiguous, {}}, {{0, 1}, L::Contiguous, {}},
      {{3, 1}, L::Transposed, {}},    {{1, 4}, L::Sliced, {}},        {{3, 1}, L::Expanded, {}}};
  infos.push_back(view_entry(
      "squeeze", squeeze_shapes, [](const Tensor& x, const Stack&) { return x.squeeze(); },
      [](const Tensor& x, const Stack&) { return squeeze_reference(x, std::nullopt); }));
  infos.push_back(view_entry(
      "squeeze(dim)",
      {{{}, L::Contiguous, args_of({0})},
       {{1}, L::Contiguous, args_of({0})},
       {{3, 1}, L::Contiguous, args_of({1})},
       {{3, 1}, L::Contiguous, args_of({0})},
       {{1, 3, 1}, L::Contiguous, args_of({-1})},
       {{0, 1}, L::Contiguous, args_of({1})},
       {{1, 4}, L::Transposed, args_of({0})},
       {{3, 1}, L::Sliced, args_of({1})},
       {{3, 1}, L::Expanded, args_of({-1})}},
      [](const Tensor& x, const Stack& a) { return x.squeeze(a[0].to_int()); },
      [](const Tensor& x, const Stack& a) { return squeeze_reference(x, a[0].to_int()); }));
  infos.push_back(view_entry(
      "expand",
      {{{}, L::Contiguous, args_of({Ints{3, 2}})},
       {{1}, L::Contiguous, args_of({Ints{5}})},
       {{1}, L::Contiguous, args_of({Ints{0}})},
       {{3, 1}, L::Contiguous, args_of({Ints{3, 4}})},
       {{3, 1}, L::Contiguous, args_of({Ints{2, 3, -1}})},
       {{3, 4}, L::Contiguous, args_of({Ints{2, 3, 4}})},
       {{0, 3}, L::Contiguous, args_of({Ints{2, 0, 3}})},
       {{1, 4}, L::Transposed, args_of({Ints{3, 4}})},
       {{3, 1}, L::Sliced, args_of({Ints{3, 5}})},
       {{3, 4}, L::Expanded, args_of({Ints{2, -1, 4}})}},
      [](const Tensor& x, const Stack& a) { return x.expand(int_list_arg(a, 0)); },
      [](const Tensor& x, const Stack& a) { return expand_reference(x, int_list_arg(a, 0)); }));
  return infos;
}

std::vector<OpInfo> reshaping_entries() {
  std::vector<OpInfo> infos;
  infos.push_back(view_entry(
      "flatten",
      {{{}, L::Contiguous, args_of({0, -1})},
       {{7}, L::Contiguous, args_of({0, -1})},
       {{3, 4}, L::Contiguous, args_of({1, 1})},
       {{2, 3, 4}, L::Contiguous, args_of({1, 2})},
       {{2, 3, 4}, L::Contiguous, args_of({-3, -2})},
       {{0, 3}, L::Contiguous, args_of({0, 1})},
       {{3, 4}, L::Transposed, args_of({0, 1})},
       {{2, 3, 4}, L::Transposed, args_of({0, 1})},
       {{3, 4}, L::Sliced, args_of({0, -1})},
       {{3, 4}, L::Expanded, args_of({0, 1})}},
      [](const Tensor& x, const Stack& a) { return x.flatten(a[0].to_int(), a[1].to_int()); },
      [](const Tensor& x, const Stack& a) {
        if (x.dim() == 0) return reshape_reference(x, {1});
        const int64_t start = wrap_reference_dim(a[0].to_int(), x.dim());
        const int64_t end = wrap_reference_dim(a[1].to_int(), x.dim());
        Ints shape;
        for (int64_t d = 0; d < x.dim(); ++d) {
          if (d <= start || d > end)
            shape.push_back(x.sizes()[d]);
          else
            shape.back() *= x.sizes()[d];
        }
        return reshape_reference(x, shape);
      }));
  infos.push_back(view_entry(
      "unflatten",
      {{{12}, L::Contiguous, args_of({0, Ints{3, 4}})},
       {{12}, L::Contiguous, args_of({0, Ints{-1, 6}})},
       {{3, 4}, L::Contiguous, args_of({-1, Ints{4, 1}})},
       {{2, 3, 4}, L::Contiguous, args_of({0, Ints{1, 2}})},
       {{0, 3}, L::Contiguous, args_of({1, Ints{3, 1}})},
       {{3, 4}, L::Transposed, args_of({1, Ints{2, 2}})},
       {{3, 4}, L::Transposed, args_of({0, Ints{3, 1}})},
       {{3, 4}, L::Sliced, args_of({1, Ints{2, -1}})},
       {{3, 4}, L::Expanded, args_of({0, Ints{1, 3}})}},
      [](const Tensor& x, const Stack& a) {
        return x.unflatten(a[0].to_int(), int_list_arg(a, 1));
      },
      [](const Tensor& x, const Stack& a) {
        const int64_t dim = wrap_reference_dim(a[0].to_int(), x.dim());
        Ints shape = x.sizes().vec();
        Ints inner = int_list_arg(a, 1);
        int64_t known = 1;
        for (int64_t s : inner) known *= s == -1 ? 1 : s;
        for (int64_t& s : inner) {
          if (s == -1) s = shape[dim] / known;
        }
        shape.erase(shape.begin() + dim);
        shape.insert(shape.begin() + dim, inner.begin(), inner.end());
        return reshape_reference(x, shape);
      }));
  infos.push_back(view_entry(
      "diagonal",
      {{{3, 4}, L::Contiguous, args_of({0, 0, 1})},
       {{3, 4}, L::Contiguous, args_of({1, 0, 1})},
       {{3, 4}, L::Contiguous, args_of({-1, 0, 1})},
       {{3, 4}, L::Contiguous, args_of({2, 1, 0})},
       {{3, 4}, L::Contiguous, args_of({5, 0, 1})},
       {{3, 4}, L::Contiguous, args_of({-4, 0, 1})},
       {{2, 3, 4}, L::Contiguous, args_of({0, 0, 2})},
       {{2, 3, 4}, L::Contiguous, args_of({1, -1, 1})},
       {{0, 3}, L::Contiguous, args_of({0, 0, 1})},
       {{3, 4}, L::Transposed, args_of({1, 0, 1})},
       {{3, 4}, L::Sliced, args_of({0, 0, 1})},
       {{3, 4}, L::Expanded, args_of({-1, 0, 1})}},
      [](const Tensor& x, const Stack& a) {
        return x.diagonal(a[0].to_int(), a[1].to_int(), a[2].to_int());
      },
      [](const Tensor& x, const Stack& a) {
        return diagonal_reference(x, a[0].to_int(), a[1].to_int(), a[2].to_int());
      }));
  auto as_strided_op = [](const Tensor& x, const Stack& a) {
    return x.as_strided(int_list_arg(a, 0), int_list_arg(a, 1), optional_int_arg(a, 2));
  };
  auto as_strided_ref = [](const Tensor& x, const Stack& a) {
    return as_strided_reference(x, int_list_arg(a, 0), int_list_arg(a, 1), optional_int_arg(a, 2));
  };
  infos.push_back(
      view_entry("as_strided",
                 {{{12}, L::Contiguous, args_of({Ints{4, 3}, Ints{1, 4}, std::nullopt})},
                  {{3, 4}, L::Contiguous, args_of({Ints{3}, Ints{5}, std::nullopt})},
                  {{}, L::Contiguous, args_of({Ints{}, Ints{}, std::nullopt})},
                  {{1}, L::Contiguous, args_of({Ints{3}, Ints{0}, std::nullopt})}},
                 as_strided_op, as_strided_ref));
  infos.push_back(view_entry("as_strided(storage_offset)",
                             {{{12}, L::Contiguous, args_of({Ints{3, 4}, Ints{4, 1}, 0})},
                              {{12}, L::Contiguous, args_of({Ints{2, 2}, Ints{6, 1}, 1})},
                              {{12}, L::Contiguous, args_of({Ints{3, 3}, Ints{1, 1}, 2})},
                              {{3, 4}, L::Contiguous, args_of({Ints{2, 3}, Ints{0, 1}, 3})},
                              {{3, 4}, L::Contiguous, args_of({Ints{0, 5}, Ints{5, 1}, 0})}},
                             as_strided_op, as_strided_ref));
  // Sample b of a batch starts b samples into the batch's storage. Inside vmap a
  // storage offset counts from the start of each sample (a sample's own offset
  // reads as 0); in the per-sample reference it counts from the start of the
  // shared storage, so every sample there reads the first sample's elements.
  for (Check check : {Check::Vmap, Check::VmapGrad}) {
    infos.back().expected_failures.push_back(
        {check, std::nullopt,
         "a storage offset inside vmap counts from each sample's start, in the per-sample "
         "reference from the start of the storage the samples share"});
  }
  return infos;
}

std::vector<OpInfo> slicing_entries() {
  std::vector<OpInfo> infos;
  infos.push_back(view_entry(
      "select",
      {{{7}, L::Contiguous, args_of({0, 3})},
       {{7}, L::Contiguous, args_of({0, -1})},
       {{1}, L::Contiguous, args_of({0, 0})},
       {{3, 4}, L::Contiguous, args_of({1, 2})},
       {{3, 4}, L::Contiguous, args_of({0, -3})},
       {{2, 3, 4}, L::Contiguous, args_of({1, 1})},
       {{0, 3}, L::Contiguous, args_of({1, 2})},
       {{3, 4}, L::Transposed, args_of({0, 1})},
       {{3, 4}, L::Sliced, args_of({1, 3})},
       {{3, 4}, L::Expanded, args_of({0, 2})}},
      [](const Tensor& x, const Stack& a) { return x.select(a[0].to_int(), a[1].to_int()); },
      [](const Tensor& x, const Stack& a) {
        const int64_t dim = wrap_reference_dim(a[0].to_int(), x.dim());
        const int64_t index = (a[1].to_int() + x.sizes()[dim]) % x.sizes()[dim];
        Ints sizes = x.sizes().vec();
        sizes.erase(sizes.begin() + dim);
        return insert_reference(x, sizes, dim, index);
      }));
  infos.push_back(view_entry(
      "narrow",
      {{{7}, L::Contiguous, args_of({0, 2, 3})},
       {{7}, L::Contiguous, args_of({0, -3, 2})},
       {{3, 4}, L::Contiguous, args_of({1, 1, 2})},
       {{3, 4}, L::Contiguous, args_of({0, 0, 0})},
       {{3, 4}, L::Contiguous, args_of({0, 3, 0})},
       {{2, 3, 4}, L::Contiguous, args_of({2, 1, 3})},
       {{0, 3}, L::Contiguous, args_of({1, 1, 1})},
       {{3, 4}, L::Transposed, args_of({0, 1, 2})},
       {{3, 4}, L::Sliced, args_of({-1, 0, 4})},
       {{3, 4}, L::Expanded, args_of({0, 1, 2})}},
      [](const Tensor& x, const Stack& a) {
        return x.narrow(a[0].to_int(), a[1].to_int(), a[2].to_int());
      },
      [](const Tensor& x, const Stack& a) {
        const int64_t dim = wrap_reference_dim(a[0].to_int(), x.dim());
        const int64_t start = a[1].to_int() < 0 ? a[1].to_int() + x.sizes()[dim] : a[1].to_int();
        return narrow_reference(x, dim, start, a[2].to_int());
      }));
  const std::optional<int64_t> none;
  infos.push_back(view_entry(
      "slice",
      {{{7}, L::Contiguous, args_of({0, 2, 5, 1})},
       {{7}, L::Contiguous, args_of({0, none, none, 2})},
       {{7}, L::Contiguous, args_of({0, -3, none, 1})},
       {{7}, L::Contiguous, args_of({0, 5, 2, 1})},
       {{7}, L::Contiguous, args_of({0, -100, 100, 3})},
       {{7}, L::Contiguous, args_of({-1, 9, none, 1})},
       {{3, 4}, L::Contiguous, args_of({1, 1, none, 2})},
       {{3, 4}, L::Contiguous, args_of({0, none, -1, 1})},
       {{2, 3, 4}, L::Contiguous, args_of({2, 0, 4, 3})},
       {{0, 3}, L::Contiguous, args_of({0, 0, 5, 1})},
       {{3, 4}, L::Transposed, args_of({0, 1, 3, 1})},
       {{3, 4}, L::Sliced, args_of({1, 1, 4, 2})},
       {{3, 4}, L::Expanded, args_of({0, 0, 3, 2})}},
      [](const Tensor& x, const Stack& a) {
        return x.slice(a[0].to_int(), optional_int_arg(a, 1), optional_int_arg(a, 2),
                       a[3].to_int());
      },
      [](const Tensor& x, const Stack& a) {
        return slice_reference(x, a[0].to_int(), optional_int_arg(a, 1), optional_int_arg(a, 2),
                               a[3].to_int());
      }));
  return infos;
}

}  // namespace

std::vector<OpInfo> view_op_entries() {
  std::vector<OpInfo> infos = rearranging_entries();
  for (auto* more : {&reshaping_entries, &slicing_entries}) {
    for (OpInfo& info : more()) infos.push_back(std::move(info));
  }
  return infos;
}

STRATA_OP_INFOS(shape) { return view_op_entries(); }

}  // namespace strata::testing
