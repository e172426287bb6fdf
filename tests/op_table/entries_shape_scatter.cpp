// Op-table entries: select_scatter, slice_scatter and diagonal_scatter
// (scatter_entry.h: each reference puts src's values at positions computed by
// index arithmetic).
#include <algorithm>

#include "tests/op_table/scatter_entry.h"

namespace strata::testing {
namespace {

using Ints = std::vector<int64_t>;
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
