#include "tests/op_table/reference.h"

#include <algorithm>
#include <optional>

namespace strata::testing {

HostArray HostArray::of(const Tensor& t) { return {t.sizes().vec(), t.to_vector<double>()}; }

double HostArray::at_broadcast(const std::vector<int64_t>& index) const {
  // Align trailing dims; a size-1 dim reads its only element.
  const size_t offset = index.size() - sizes.size();
  int64_t flat = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t i = sizes[d] == 1 ? 0 : index[offset + d];
    flat = flat * sizes[d] + i;
  }
  return values[static_cast<size_t>(flat)];
}

Tensor from_values(const std::vector<double>& values, const std::vector<int64_t>& sizes,
                   ScalarType dtype) {
  Tensor as_double = tensor(values, sizes);
  Tensor out = empty(sizes, dtype);
  out.copy_(as_double);
  return out;
}

ScalarType reference_result_type(const std::vector<Tensor>& operands) {
  auto category = [](ScalarType t) { return t == kBool ? 0 : t == kInt64 ? 1 : 2; };
  auto wider = [](ScalarType a, ScalarType b) {
    const ScalarType order[] = {kBool, kInt64, kFloat32, kFloat64};
    int ia = 0, ib = 0;
    for (int i = 0; i < 4; ++i) {
      if (order[i] == a) ia = i;
      if (order[i] == b) ib = i;
    }
    return order[std::max(ia, ib)];
  };
  // Class 0: tensors with dims, 1: 0-dim tensors, 2: wrapped numbers.
  std::optional<ScalarType> by_class[3];
  for (const Tensor& t : operands) {
    const int cls = t.impl()->is_wrapped_number() ? 2 : t.dim() > 0 ? 0 : 1;
    by_class[cls] = by_class[cls] ? wider(*by_class[cls], t.dtype()) : t.dtype();
  }
  std::optional<ScalarType> result;
  for (int cls = 0; cls < 3; ++cls) {
    if (!by_class[cls]) continue;
    if (!result) {
      result = by_class[cls];
    } else if (category(*by_class[cls]) > category(*result)) {
      result = cls == 2 && category(*by_class[cls]) == 2 ? kFloat32 : *by_class[cls];
    }
  }
  return *result;
}

std::vector<int64_t> broadcast_sizes(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[rank - s.size() + d];
      if (s[d] != 1) o = s[d];
    }
  }
  return out;
}

void for_each_index(const std::vector<int64_t>& sizes,
                    const std::function<void(const std::vector<int64_t>&)>& f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(index);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

Tensor map_nary(const std::vector<Tensor>& operands, ScalarType out_dtype,
                const std::function<double(const std::vector<double>&)>& f) {
  std::vector<HostArray> arrays;
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor& t : operands) {
    arrays.push_back(HostArray::of(t));
    shapes.push_back(arrays.back().sizes);
  }
  const std::vector<int64_t> sizes = broadcast_sizes(shapes);
  std::vector<double> out;
  std::vector<double> args(operands.size());
  for_each_index(sizes, [&](const std::vector<int64_t>& index) {
    for (size_t k = 0; k < arrays.size(); ++k) args[k] = arrays[k].at_broadcast(index);
    out.push_back(f(args));
  });
  return from_values(out, sizes, out_dtype);
}

Tensor map_unary(const Tensor& x, ScalarType out_dtype, const std::function<double(double)>& f) {
  return map_nary({x}, out_dtype, [&](const std::vector<double>& v) { return f(v[0]); });
}

Tensor map_binary(const Tensor& a, const Tensor& b, ScalarType out_dtype,
                  const std::function<double(double, double)>& f) {
  return map_nary({a, b}, out_dtype, [&](const std::vector<double>& v) { return f(v[0], v[1]); });
}

Tensor reduce_values(const Tensor& x, std::vector<int64_t> dims, bool keepdim, ScalarType out_dtype,
                     const std::function<double(const std::vector<double>&)>& reduce) {
  const HostArray in = HostArray::of(x);
  const int64_t rank = static_cast<int64_t>(in.sizes.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(d < 0 ? d + rank : d)] = true;
  // Output index space: kept dims (size 1 for reduced dims when keepdim).
  std::vector<int64_t> kept_sizes, out_sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) kept_sizes.push_back(in.sizes[d]);
    if (!reduced[d])
      out_sizes.push_back(in.sizes[d]);
    else if (keepdim)
      out_sizes.push_back(1);
  }
  std::vector<std::vector<double>> groups;
  for_each_index(kept_sizes, [&](const std::vector<int64_t>&) { groups.emplace_back(); });
  if (kept_sizes.empty() && groups.empty()) groups.emplace_back();
  for_each_index(in.sizes, [&](const std::vector<int64_t>& index) {
    int64_t group = 0, flat = 0;
    for (int64_t d = 0; d < rank; ++d) {
      flat = flat * in.sizes[d] + index[d];
      if (!reduced[d]) group = group * in.sizes[d] + index[d];
    }
    groups[static_cast<size_t>(group)].push_back(in.values[static_cast<size_t>(flat)]);
  });
  std::vector<double> out;
  for (const auto& g : groups) out.push_back(reduce(g));
  return from_values(out, out_sizes, out_dtype);
}

std::optional<Tensor> input_or_none(const std::vector<Tensor>& in, size_t i) {
  return i < in.size() ? std::optional(in[i]) : std::nullopt;
}

int64_t positions(const std::vector<int64_t>& sizes) {
  int64_t p = 1;
  for (size_t d = 2; d < sizes.size(); ++d) p *= sizes[d];
  return p;
}

}  // namespace strata::testing
