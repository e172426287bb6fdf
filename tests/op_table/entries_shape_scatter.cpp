// Op-table entries: select_scatter, slice_scatter and diagonal_scatter. Each
// reference copies self's row-major values and puts src's value at each position
// of the region, computed by index arithmetic (shape_reference.h).
#include <algorithm>
#include <sstream>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"
#include "tests/op_table/shape_reference.h"

namespace strata::testing {
namespace {

using Ints = std::vector<int64_t>;
using Position = std::function<Index(const Index&)>;

// One sample: self of the given shape and layout, src of the region's shape.
struct ScatterCase {
  Ints self_sizes;
  Layout layout;
  Ints src_sizes;
  Stack args;
};

Tensor scatter_reference(const Tensor& self, const Tensor& src, const Position& position) {
  HostArray out = HostArray::of(self);
  const HostArray values = HostArray::of(src);
  for_each_index(values.sizes, [&](const Index& r) {
    out.values[static_cast<size_t>(ravel(position(r), out.sizes))] =
        values.values[static_cast<size_t>(ravel(r, values.sizes))];
  });
  return from_values(out.values, out.sizes, self.dtype());
}

using ScatterFn = std::function<Tensor(const Tensor&, const Tensor&, const Stack&)>;
// Where element r of src goes in self, for a sample's arguments and self's sizes.
using PositionFn = std::function<Position(const Stack&, const Ints&)>;

OpInfo scatter_entry(std::string name, std::vector<ScatterCase> cases, ScatterFn op,
                     PositionFn position) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [cases = std::move(cases)](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const ScatterCase& c : cases) {
      std::ostringstream what;
      what << ShapeCase{c.self_sizes, c.layout}.description() << " src "
           << shape_string(c.src_sizes) << " args";
      for (const IValue& arg : c.args) what << ' ' << arg;
      samples.push_back({what.str(),
                         {make_tensor(c.self_sizes, dtype, c.layout),
                          make_tensor(c.src_sizes, dtype, -2.0, 2.0, 7)},
                         c.args});
    }
    return samples;
  };
  info.op = [op](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{op(in[0], in[1], args)};
  };
  info.reference = [position](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{
        scatter_reference(in[0], in[1], position(args, in[0].sizes().vec()))};
  };
  return info;
}

Stack args_of(std::initializer_list<IValue> values) { return Stack(values); }
using L = Layout;

}  // namespace

STRATA_OP_INFOS(shape_scatter) {
  std::vector<OpInfo> infos;
  infos.push_back(scatter_entry(
      "select_scatter",
      {{{5}, L::Contiguous, {}, args_of({0, 3})},
       {{3, 4}, L::Contiguous, {4}, args_of({0, -1})},
       {{3, 4}, L::Transposed, {3}, args_of({1, 2})},
       {{2, 3, 4}, L::Contiguous, {2, 4}, args_of({-2, 0})},
       {{3, 4}, L::Sliced, {4}, args_of({0, 1})},
       {{0, 3}, L::Contiguous, {0}, args_of({1, 2})}},
      [](const Tensor& self, const Tensor& src, const Stack& a) {
        return select_scatter(self, src, a[0].to_int(), a[1].to_int());
      },
      [](const Stack& a, const Ints& sizes) -> Position {
        const int64_t dim = wrap_reference_dim(a[0].to_int(), static_cast<int64_t>(sizes.size()));
        const int64_t index = (a[1].to_int() + sizes[dim]) % sizes[dim];
        return [=](const Index& r) {
          Index at = r;
          at.insert(at.begin() + dim, index);
          return at;
        };
      }));
  infos.push_back(scatter_entry(
      "slice_scatter",
      {{{7}, L::Contiguous, {3}, args_of({0, 1, 4, 1})},
       {{7}, L::Contiguous, {3}, args_of({0, std::nullopt, std::nullopt, 3})},
       {{7}, L::Contiguous, {2}, args_of({0, -3, 100, 2})},
       {{3, 4}, L::Transposed, {3, 2}, args_of({1, 1, 3, 1})},
       {{2, 3, 4}, L::Contiguous, {2, 2, 4}, args_of({-2, 0, 2, 1})},
       {{3, 4}, L::Sliced, {0, 4}, args_of({0, 2, 1, 1})}},
      [](const Tensor& self, const Tensor& src, const Stack& a) {
        return slice_scatter(self, src, a[0].to_int(), optional_int_arg(a, 1),
                             optional_int_arg(a, 2), a[3].to_int());
      },
      [](const Stack& a, const Ints& sizes) -> Position {
        const int64_t dim = wrap_reference_dim(a[0].to_int(), static_cast<int64_t>(sizes.size()));
        int64_t start = optional_int_arg(a, 1).value_or(0);
        if (start < 0) start += sizes[dim];
        start = std::clamp<int64_t>(start, 0, sizes[dim]);
        const int64_t step = a[3].to_int();
        return [=](const Index& r) {
          Index at = r;
          at[dim] = start + step * r[dim];
          return at;
        };
      }));
  infos.push_back(scatter_entry(
      "diagonal_scatter",
      {{{3, 4}, L::Contiguous, {3}, args_of({0, 0, 1})},
       {{3, 4}, L::Contiguous, {3}, args_of({1, 0, 1})},
       {{3, 4}, L::Contiguous, {2}, args_of({-1, 0, 1})},
       {{3, 4}, L::Transposed, {3}, args_of({0, 1, 0})},
       {{2, 3, 4}, L::Contiguous, {3, 2}, args_of({0, 0, 2})},
       {{3, 4}, L::Contiguous, {0}, args_of({5, 0, 1})}},
      [](const Tensor& self, const Tensor& src, const Stack& a) {
        return diagonal_scatter(self, src, a[0].to_int(), a[1].to_int(), a[2].to_int());
      },
      [](const Stack& a, const Ints& sizes) -> Position {
        const int64_t rank = static_cast<int64_t>(sizes.size());
        const int64_t offset = a[0].to_int();
        const int64_t d1 = wrap_reference_dim(a[1].to_int(), rank);
        const int64_t d2 = wrap_reference_dim(a[2].to_int(), rank);
        const int64_t row0 = std::max<int64_t>(-offset, 0), col0 = std::max<int64_t>(offset, 0);
        return [=](const Index& r) {
          Index at(static_cast<size_t>(rank));
          size_t k = 0;
          for (int64_t d = 0; d < rank; ++d) {
            if (d != d1 && d != d2) at[d] = r[k++];
          }
          at[d1] = row0 + r.back();
          at[d2] = col0 + r.back();
          return at;
        };
      }));
  return infos;
}

}  // namespace strata::testing
