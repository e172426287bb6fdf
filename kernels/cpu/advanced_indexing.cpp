#include "kernels/cpu/advanced_indexing.h"

#include <cstring>
#include <type_traits>

#include "tensor/dispatch_dtype.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::cpu {

std::vector<int64_t> block_offsets(const std::vector<Tensor>& indices, IntArrayRef sizes,
                                   const char* op) {
  const int64_t positions = indices.empty() ? 1 : indices.front().numel();
  std::vector<int64_t> offsets(static_cast<size_t>(positions), 0);
  // Elements per step along each dim of a contiguous tensor of `sizes`.
  int64_t step = 1;
  for (size_t d = indices.size(); d < sizes.size(); ++d) step *= sizes[d];
  for (size_t k = indices.size(); k-- > 0;) {
    const int64_t size = sizes[k];
    const int64_t* values = indices[k].data_ptr<int64_t>();
    for (int64_t p = 0; p < positions; ++p) {
      int64_t v = values[p];
      STRATA_CHECK(v >= -size && v < size, op, "index ", v, " is out of range for dim ", k,
                   " of size ", size, " (expected an index in [", -size, ", ", size, "))");
      if (v < 0) v += size;
      offsets[static_cast<size_t>(p)] += v * step;
    }
    step *= size;
  }
  return offsets;
}

void take_blocks(const Tensor& out, const Tensor& src, const std::vector<int64_t>& offsets,
                 int64_t block) {
  const size_t bytes = static_cast<size_t>(block) * element_size(src.dtype());
  if (bytes == 0) return;
  char* o = static_cast<char*>(out.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  for (size_t p = 0; p < offsets.size(); ++p) {
    std::memcpy(o + p * bytes, s + static_cast<size_t>(offsets[p]) * element_size(src.dtype()),
                bytes);
  }
}

void put_blocks(const Tensor& target, const Tensor& values, const std::vector<int64_t>& offsets,
                int64_t block, bool accumulate) {
  STRATA_DISPATCH_ALL_TYPES(target.dtype(), "strata::index_put", [&] {
    scalar_t* t = target.data_ptr<scalar_t>();
    const scalar_t* v = values.data_ptr<scalar_t>();
    for (size_t p = 0; p < offsets.size(); ++p) {
      scalar_t* to = t + offsets[p];
      const scalar_t* from = v + static_cast<int64_t>(p) * block;
      for (int64_t i = 0; i < block; ++i) {
        if (!accumulate) {
          to[i] = from[i];
        } else if constexpr (std::is_same_v<scalar_t, bool>) {
          to[i] = to[i] || from[i];
        } else {
          to[i] += from[i];
        }
      }
    }
  });
}

}  // namespace strata::cpu
