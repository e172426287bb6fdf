// Op-table entries: the list views (split, chunk, unbind) and the joins (cat, stack).
#include <sstream>

#include "dispatcher/dispatcher.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"
#include "tests/op_table/shape_reference.h"

namespace strata::testing {
namespace {

using L = Layout;
using Ints = std::vector<int64_t>;
using ListFn = std::function<std::vector<Tensor>(const Tensor&, int64_t, int64_t)>;

struct SplitCase {
  Ints sizes;
  Layout layout;
  int64_t amount;  // split_size or chunks; unused by unbind
  int64_t dim;
};

// One piece per (start, length) along dim, as narrow references.
std::vector<Tensor> pieces_reference(const Tensor& x, int64_t dim,
                                     const std::vector<std::pair<int64_t, int64_t>>& pieces) {
  std::vector<Tensor> out;
  for (const auto& [start, length] : pieces) out.push_back(narrow_reference(x, dim, start, length));
  return out;
}

// An entry whose op splits one input into a list; `bounds(size, amount)` gives the
// (start, length) of each piece along the dim.
OpInfo split_like_entry(
    std::string name, std::vector<SplitCase> cases, ListFn op,
    std::function<std::vector<std::pair<int64_t, int64_t>>(int64_t, int64_t)> bounds) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [cases = std::move(cases)](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const SplitCase& c : cases) {
      std::ostringstream description;
      description << ShapeCase{c.sizes, c.layout}.description() << " amount " << c.amount << " dim "
                  << c.dim;
      samples.push_back({description.str(),
                         {make_tensor(c.sizes, dtype, c.layout)},
                         {IValue(c.amount), IValue(c.dim)}});
    }
    return samples;
  };
  info.op = [op](const std::vector<Tensor>& in, const Stack& args) {
    return op(in[0], args[0].to_int(), args[1].to_int());
  };
  info.reference = [bounds](const std::vector<Tensor>& in, const Stack& args) {
    const int64_t dim = wrap_reference_dim(args[1].to_int(), in[0].dim());
    return pieces_reference(in[0], dim, bounds(in[0].sizes()[dim], args[0].to_int()));
  };
  return info;
}

std::vector<std::pair<int64_t, int64_t>> split_bounds(int64_t size, int64_t split_size) {
  std::vector<std::pair<int64_t, int64_t>> pieces;
  for (int64_t start = 0; start < size; start += split_size) {
    pieces.emplace_back(start, std::min(split_size, size - start));
  }
  if (pieces.empty()) pieces.emplace_back(0, 0);
  return pieces;
}

// The _copy form (split_copy, unbind_copy) of a split-like view's entry: the
// same samples and reference, the op called by name on the arguments `used`.
OpInfo list_copy_entry(const OpInfo& view, const std::string& name, const std::string& overload,
                       std::vector<size_t> used) {
  OpInfo info = view;
  info.name = name;
  info.op = [op = OperatorName{"strata::" + name, overload}, used](const std::vector<Tensor>& in,
                                                                   const Stack& args) {
    const std::optional<OperatorHandle> handle = Dispatcher::singleton().find_schema(op);
    STRATA_CHECK(handle.has_value(), "op table", "no operator ", op.to_string());
    Stack stack{in[0]};
    for (size_t i : used) stack.push_back(args[i]);
    handle->call_boxed(stack);
    return stack[0].to_tensor_list();
  };
  std::erase_if(info.expected_failures,
                [](const ExpectedFailure& f) { return f.check == Check::Functionalize; });
  return info;
}

// A list of tensors of the entry's dtype (or `other_dtype` where flagged) and the dim.
struct JoinCase {
  std::vector<Ints> shapes;
  std::vector<Layout> layouts;  // one per shape; contiguous when missing
  int64_t dim;
  int other_dtype_at = -1;  // this input gets Int64 (Bool for an Int64 entry)
};

OpInfo join_entry(std::string name, std::vector<JoinCase> cases,
                  std::function<Tensor(const std::vector<Tensor>&, int64_t)> op,
                  std::function<Tensor(const std::vector<Tensor>&, int64_t)> reference) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [cases = std::move(cases)](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const JoinCase& c : cases) {
      Sample sample;
      std::ostringstream description;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        const Layout layout = i < c.layouts.size() ? c.layouts[i] : L::Contiguous;
        ScalarType t = dtype;
        if (static_cast<int>(i) == c.other_dtype_at) t = dtype == kInt64 ? kBool : kInt64;
        sample.inputs.push_back(make_tensor(c.shapes[i], t, layout, -2.0, 2.0, i));
        description << (i ? " + " : "") << ShapeCase{c.shapes[i], layout}.description() << ' ' << t;
      }
      description << " dim " << c.dim;
      sample.description = description.str();
      sample.args = {IValue(c.dim)};
      samples.push_back(std::move(sample));
    }
    return samples;
  };
  info.op = [op](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{op(in, args[0].to_int())};
  };
  info.reference = [reference](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{reference(in, args[0].to_int())};
  };
  return info;
}

// 1-D tensors of shape [0] take no part in cat's shapes, only in its dtype.
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; }

Tensor cat_reference(const std::vector<Tensor>& inputs, int64_t dim) {
  std::vector<const Tensor*> parts;
  for (const Tensor& t : inputs) {
    if (!is_legacy_empty(t)) parts.push_back(&t);
  }
  if (parts.empty()) parts.push_back(&inputs.back());
  const int64_t d = wrap_reference_dim(dim, parts[0]->dim());
  std::vector<HostArray> arrays;
  Ints sizes = parts[0]->sizes().vec();
  sizes[d] = 0;
  for (const Tensor* t : parts) {
    arrays.push_back(HostArray::of(*t));
    sizes[d] += t->sizes()[d];
  }
  std::vector<double> values;
  for_each_index(sizes, [&](Index i) {
    size_t k = 0;
    while (i[d] >= arrays[k].sizes[d]) i[d] -= arrays[k++].sizes[d];
    values.push_back(arrays[k].values[static_cast<size_t>(ravel(i, arrays[k].sizes))]);
  });
  return from_values(values, sizes, reference_result_type(inputs));
}

Tensor stack_reference(const std::vector<Tensor>& inputs, int64_t dim) {
  const int64_t d = wrap_reference_dim(dim, inputs[0].dim() + 1);
  std::vector<HostArray> arrays;
  for (const Tensor& t : inputs) arrays.push_back(HostArray::of(t));
  Ints sizes = inputs[0].sizes().vec();
  sizes.insert(sizes.begin() + d, static_cast<int64_t>(inputs.size()));
  std::vector<double> values;
  for_each_index(sizes, [&](Index i) {
    const HostArray& source = arrays[static_cast<size_t>(i[d])];
    i.erase(i.begin() + d);
    values.push_back(source.values[static_cast<size_t>(ravel(i, source.sizes))]);
  });
  return from_values(values, sizes, reference_result_type(inputs));
}

STRATA_OP_INFOS(shape_joins) {
  std::vector<OpInfo> infos;
  infos.push_back(split_like_entry(
      "split",
      {{{7}, L::Contiguous, 3, 0},
       {{7}, L::Contiguous, 7, 0},
       {{7}, L::Contiguous, 10, 0},
       {{3, 4}, L::Contiguous, 1, 1},
       {{3, 4}, L::Contiguous, 3, -1},
       {{2, 3, 4}, L::Contiguous, 2, 1},
       {{0, 3}, L::Contiguous, 1, 0},
       {{0, 3}, L::Contiguous, 2, 1},
       {{3, 4}, L::Transposed, 3, 1},
       {{3, 4}, L::Sliced, 2, 0},
       {{3, 4}, L::Expanded, 2, 0}},
      [](const Tensor& x, int64_t amount, int64_t dim) { return x.split(amount, dim); },
      &split_bounds));
  infos.push_back(split_like_entry(
      "chunk",
      {{{7}, L::Contiguous, 3, 0},
       {{7}, L::Contiguous, 7, 0},
       {{7}, L::Contiguous, 10, 0},
       {{6}, L::Contiguous, 4, 0},
       {{3, 4}, L::Contiguous, 2, 1},
       {{0, 3}, L::Contiguous, 2, 0},
       {{3, 4}, L::Transposed, 2, 0},
       {{3, 4}, L::Sliced, 3, 1},
       {{3, 4}, L::Expanded, 2, -2}},
      [](const Tensor& x, int64_t amount, int64_t dim) { return x.chunk(amount, dim); },
      [](int64_t size, int64_t chunks) {
        if (size == 0) return std::vector<std::pair<int64_t, int64_t>>(chunks, {0, 0});
        return split_bounds(size, (size + chunks - 1) / chunks);
      }));
  infos.push_back(split_like_entry(
      "unbind",
      {{{7}, L::Contiguous, 0, 0},
       {{1}, L::Contiguous, 0, 0},
       {{3, 4}, L::Contiguous, 0, 1},
       {{3, 4}, L::Contiguous, 0, -1},
       {{2, 3, 4}, L::Contiguous, 0, 2},
       {{0, 3}, L::Contiguous, 0, 1},
       {{0, 3}, L::Contiguous, 0, 0},
       {{3, 4}, L::Transposed, 0, 1},
       {{3, 4}, L::Sliced, 0, 0},
       {{3, 4}, L::Expanded, 0, 0}},
      [](const Tensor& x, int64_t, int64_t dim) { return x.unbind(dim); },
      [](int64_t size, int64_t) {
        std::vector<std::pair<int64_t, int64_t>> pieces;
        for (int64_t i = 0; i < size; ++i) pieces.emplace_back(i, 1);
        return pieces;
      }));
  // unbind's pieces drop the dim: squeeze the narrow references.
  infos.back().reference = [](const std::vector<Tensor>& in, const Stack& args) {
    const Tensor& x = in[0];
    const int64_t dim = wrap_reference_dim(args[1].to_int(), x.dim());
    Ints sizes = x.sizes().vec();
    sizes.erase(sizes.begin() + dim);
    std::vector<Tensor> out;
    for (int64_t k = 0; k < x.sizes()[dim]; ++k) {
      out.push_back(remap_reference(x, sizes, [&](Index i) {
        i.insert(i.begin() + dim, k);
        return i;
      }));
    }
    return out;
  };
  infos.push_back(list_copy_entry(infos.front(), "split_copy", "Tensor", {0, 1}));
  infos.push_back(list_copy_entry(infos[2], "unbind_copy", "int", {1}));
  infos.push_back(join_entry(
      "cat",
      {{{{3, 4}, {2, 4}}, {}, 0},
       {{{3, 4}, {3, 1}, {3, 2}}, {}, 1},
       {{{3, 4}, {3, 2}}, {}, -1},
       {{{7}, {1}, {0}}, {}, 0},
       {{{2, 3, 4}, {2, 1, 4}}, {}, 1},
       {{{0, 3}, {2, 3}}, {}, 0},
       {{{2, 0}, {2, 3}}, {}, 1},
       {{{0}, {2, 3}}, {}, 1},
       {{{2, 3}, {0}, {2, 3}}, {}, 0},
       {{{3, 4}}, {}, 0},
       {{{3, 4}, {3, 4}}, {L::Transposed, L::Contiguous}, 0},
       {{{3, 4}, {3, 4}}, {L::Sliced, L::Expanded}, 1},
       {{{2, 3, 4}, {2, 3, 4}}, {L::Transposed, L::Sliced}, 2},
       {{{2, 3}, {1, 3}}, {}, 0, 1},
       {{{3, 4}, {3, 4}}, {L::Contiguous, L::Transposed}, 1, 0}},
      [](const std::vector<Tensor>& in, int64_t dim) { return cat(in, dim); }, &cat_reference));
  infos.push_back(join_entry(
      "stack",
      {{{{3, 4}, {3, 4}}, {}, 0},
       {{{3, 4}, {3, 4}, {3, 4}}, {}, 1},
       {{{3, 4}, {3, 4}}, {}, 2},
       {{{3, 4}, {3, 4}}, {}, -1},
       {{{}, {}, {}}, {}, 0},
       {{{0, 3}, {0, 3}}, {}, 1},
       {{{7}}, {}, 0},
       {{{3, 4}, {3, 4}}, {L::Transposed, L::Sliced}, 1},
       {{{3, 4}, {3, 4}}, {L::Expanded, L::Contiguous}, 2},
       {{{2, 3}, {2, 3}}, {}, 0, 1}},
      [](const std::vector<Tensor>& in, int64_t dim) { return stack(in, dim); }, &stack_reference));
  return infos;
}

}  // namespace
}  // namespace strata::testing
