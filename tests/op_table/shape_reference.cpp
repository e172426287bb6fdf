#include "tests/op_table/shape_reference.h"

#include <algorithm>

#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {

int64_t wrap_reference_dim(int64_t dim, int64_t rank) {
  const int64_t bound = std::max<int64_t>(rank, 1);
  return dim < 0 ? dim + bound : dim;
}

int64_t ravel(const Index& index, const std::vector<int64_t>& sizes) {
  int64_t offset = 0;
  for (size_t d = 0; d < sizes.size(); ++d) offset = offset * sizes[d] + index[d];
  return offset;
}

Index unravel(int64_t offset, const std::vector<int64_t>& sizes) {
  Index index(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    index[d] = offset % sizes[d];
    offset /= sizes[d];
  }
  return index;
}

Tensor remap_reference(const Tensor& x, const std::vector<int64_t>& out_sizes,
                       const std::function<Index(const Index&)>& source) {
  const HostArray in = HostArray::of(x);
  std::vector<double> values;
  for_each_index(out_sizes, [&](const Index& i) {
    values.push_back(in.values[static_cast<size_t>(ravel(source(i), in.sizes))]);
  });
  return from_values(values, out_sizes, x.dtype());
}

Tensor reshape_reference(const Tensor& x, std::vector<int64_t> shape) {
  int64_t known = 1;
  for (int64_t s : shape) known *= s == -1 ? 1 : s;
  for (int64_t& s : shape) {
    if (s == -1) s = x.numel() / known;
  }
  return from_values(HostArray::of(x).values, shape, x.dtype());
}

Tensor narrow_reference(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes[static_cast<size_t>(dim)] = length;
  return remap_reference(x, sizes, [&](Index i) {
    i[static_cast<size_t>(dim)] += start;
    return i;
  });
}

Tensor make_index(const std::vector<int64_t>& sizes, int64_t bound, uint64_t seed, bool strided) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    values[static_cast<size_t>(i)] = static_cast<int64_t>(
        (static_cast<uint64_t>(i) * 7 + seed * 3 + 1) % static_cast<uint64_t>(bound));
  }
  if (!strided || sizes.empty()) return tensor(values, sizes);
  if (sizes.size() == 1) {
    std::vector<int64_t> spread(static_cast<size_t>(2 * n + 1), -1);
    for (int64_t i = 0; i < n; ++i)
      spread[static_cast<size_t>(2 * i + 1)] = values[static_cast<size_t>(i)];
    return strided_view(tensor(spread, {2 * n + 1}), sizes, {2}, 1);
  }
  // The transposed storage holds values[ravel(i)] at the reversed index of i.
  std::vector<int64_t> reversed(sizes.rbegin(), sizes.rend());
  std::vector<int64_t> storage(values.size());
  for (int64_t i = 0; i < n; ++i) {
    Index index = unravel(i, sizes);
    std::reverse(index.begin(), index.end());
    storage[static_cast<size_t>(ravel(index, reversed))] = values[static_cast<size_t>(i)];
  }
  Tensor base = tensor(storage, reversed);
  std::vector<int64_t> strides = base.strides().vec();
  std::reverse(strides.begin(), strides.end());
  return strided_view(base, sizes, strides, 0);
}

std::vector<int64_t> int_list_arg(const Stack& args, size_t i) { return args[i].to_int_list(); }

std::optional<int64_t> optional_int_arg(const Stack& args, size_t i) {
  if (args[i].is_none()) return std::nullopt;
  return args[i].to_int();
}

}  // namespace strata::testing
