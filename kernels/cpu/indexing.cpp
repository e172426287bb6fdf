#include "kernels/cpu/indexing.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/parallel.h"
#include "kernels/scalar_cast.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// Where index values point: `size` positions along `dim`, `step` bytes apart.
struct IndexedDim {
  int64_t step;
  int64_t size;
  int64_t dim;
  const char* op;
};

[[noreturn]] void index_out_of_range(int64_t value, const IndexedDim& target) {
  STRATA_FAIL(target.op, "index ", value, " is out of range for dim ", target.dim, " of size ",
              target.size, " (expected an index in [0, ", target.size, "))");
}

inline int64_t checked_offset(const char* index, const IndexedDim& target) {
  const int64_t value = *reinterpret_cast<const int64_t*>(index);
  // One unsigned compare catches negative values too.
  if (static_cast<uint64_t>(value) >= static_cast<uint64_t>(target.size)) {
    index_out_of_range(value, target);
  }
  return value * target.step;
}

// True when all n contiguous values lie in [0, size): a branch-free scan that
// vectorizes. (Gathers check as they go instead: a second pass costs them more
// than the well-predicted branch.)
inline bool all_in_range(const int64_t* values, int64_t n, int64_t size) {
  bool out_of_range = false;
  for (int64_t i = 0; i < n; ++i) {
    out_of_range |= static_cast<uint64_t>(values[i]) >= static_cast<uint64_t>(size);
  }
  return !out_of_range;
}

// Adapts a capturing row lambda to the elementwise driver's RowFn.
template <class Row>
void run_rows(const ElementwiseLayout& layout, Row& row) {
  run_elementwise(
      layout,
      [](void* ctx, char** data, const int64_t* strides, int64_t n) {
        (*static_cast<Row*>(ctx))(data, strides, n);
      },
      &row);
}

// A tensor reading t's storage (from t's offset) with the given geometry.
Tensor restrided(const Tensor& t, IntArrayRef sizes, IntArrayRef strides) {
  return Tensor(make_intrusive<TensorImpl>(t.impl()->storage(), t.dtype(), sizes, strides,
                                           t.storage_offset()));
}

// t's strides with the one of `dim` zeroed: the index supplies that coordinate.
DimVector strides_without(const Tensor& t, int64_t dim) {
  DimVector strides(t.strides());
  if (t.dim() > 0) strides[dim] = 0;
  return strides;
}

IndexedDim indexed_dim(const Tensor& self, int64_t dim, const char* op) {
  if (self.dim() == 0) return {0, 1, dim, op};
  return {self.strides()[dim] * element_size(self.dtype()), self.sizes()[dim], dim, op};
}

// Note [Gathers and scatters]
// A gather reads source[p + index[p] * step] for every position p of the output:
// the source is laid over the output's shape with stride 0 along the indexed dim,
// and the elementwise driver (merged dims, parallel rows) walks out, index and
// source together. A scatter accumulates into target[p + index[p] * step]; two
// positions that differ only along the indexed dim may hit the same element, so
// the work is split over the other dims only and each piece walks the whole
// indexed dim itself — no two threads ever write the same element.
template <class T>
void gather_row(const IndexedDim& target, char** data, const int64_t* strides, int64_t n) {
  char* out = data[0];
  const char* index = data[1];
  const char* source = data[2];
  if (strides[1] == 0) {  // one index for the whole row: a plain copy of a source row
    const char* row = source + checked_offset(index, target);
    if (strides[0] == sizeof(T) && strides[2] == sizeof(T)) {
      std::memcpy(out, row, static_cast<size_t>(n) * sizeof(T));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<T*>(out + i * strides[0]) =
            *reinterpret_cast<const T*>(row + i * strides[2]);
      }
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    *reinterpret_cast<T*>(out + i * strides[0]) = *reinterpret_cast<const T*>(
        source + i * strides[2] + checked_offset(index + i * strides[1], target));
  }
}

void run_gather(const Tensor& out, const Tensor& index_view, const Tensor& source_view,
                const IndexedDim& target) {
  ElementwiseLayout layout = make_elementwise_layout(out, {&index_view, &source_view});
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), target.op, [&] {
    auto row = [&target](char** data, const int64_t* strides, int64_t n) {
      gather_row<scalar_t>(target, data, strides, n);
    };
    run_rows(layout, row);
  });
}

// A scatter (Note [Gathers and scatters]): operands 0 source, 1 index, 2 target,
// laid over the dims other than the indexed one in `rest`.
struct ScatterLoop {
  ElementwiseLayout rest;
  int64_t length = 1;                    // the extent of the indexed dim
  std::array<int64_t, 3> dim_strides{};  // bytes per step along it; the target's is 0
  int64_t step = 0;                      // bytes the target moves per unit of index value
};

// Iterates `sizes` (the source's positions) with the source, the index and the
// target `self` read through the given element strides over sizes.
ScatterLoop make_scatter_loop(IntArrayRef sizes, int64_t dim, const Tensor& source,
                              IntArrayRef source_strides, const Tensor& index,
                              IntArrayRef index_strides, const Tensor& self) {
  const int64_t esize = element_size(self.dtype());
  ScatterLoop loop;
  loop.step = indexed_dim(self, dim, "").step;
  DimVector rest_sizes;
  std::array<DimVector, 3> rest_strides;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (d == dim) {
      loop.length = sizes[d];
      loop.dim_strides = {source_strides[d] * esize,
                          index_strides[d] * static_cast<int64_t>(sizeof(int64_t)), 0};
      continue;
    }
    rest_sizes.push_back(sizes[d]);
    rest_strides[0].push_back(source_strides[d]);
    rest_strides[1].push_back(index_strides[d]);
    rest_strides[2].push_back(self.strides()[d]);
  }
  const Tensor source_rest = restrided(source, rest_sizes, rest_strides[0]);
  const Tensor index_rest = restrided(index, rest_sizes, rest_strides[1]);
  const Tensor target_rest = restrided(self, rest_sizes, rest_strides[2]);
  loop.rest = make_elementwise_layout(source_rest, {&index_rest, &target_rest});
  return loop;
}

// Calls row(pointers, strides, n) for the rows of layout's linear range [begin, end).
template <class Row>
void for_each_row(const ElementwiseLayout& layout, int64_t begin, int64_t end, Row&& row) {
  const int64_t ndim = static_cast<int64_t>(layout.shape.size());
  std::array<char*, kMaxOperands> ptrs = layout.data;
  std::array<int64_t, kMaxOperands> inner{};
  if (ndim == 0) {
    row(ptrs.data(), inner.data(), int64_t{1});
    return;
  }
  for (int op = 0; op < layout.num_operands; ++op) inner[op] = layout.strides[op][ndim - 1];
  DimVector position(static_cast<size_t>(ndim), 0);
  for (int64_t d = ndim - 1, rem = begin; d >= 0; --d) {
    position[d] = rem % layout.shape[d];
    rem /= layout.shape[d];
  }
  while (begin < end) {
    for (int op = 0; op < layout.num_operands; ++op) {
      ptrs[op] = layout.data[op];
      for (int64_t d = 0; d < ndim; ++d) ptrs[op] += position[d] * layout.strides[op][d];
    }
    const int64_t n = std::min(layout.shape[ndim - 1] - position[ndim - 1], end - begin);
    row(ptrs.data(), inner.data(), n);
    begin += n;
    position[ndim - 1] += n;
    for (int64_t d = ndim - 1; d > 0 && position[d] == layout.shape[d]; --d) {
      position[d] = 0;
      ++position[d - 1];
    }
  }
}

// n positions of `rest` (pointers p, strides rs), each with the whole indexed dim.
template <class T, class Accumulate>
void scatter_rows(const ScatterLoop& loop, char* const* p, const int64_t* rs, int64_t n,
                  const Accumulate& accumulate) {
  const std::array<int64_t, 3>& ds = loop.dim_strides;
  auto target = [&loop](const char* index, char* base) {
    return reinterpret_cast<T*>(base + *reinterpret_cast<const int64_t*>(index) * loop.step);
  };
  auto value = [](const char* source) { return *reinterpret_cast<const T*>(source); };
  // Walk innermost whichever of the indexed dim and the row is denser in the source.
  if (n == 1 || std::abs(ds[0]) < std::abs(rs[0])) {
    for (int64_t i = 0; i < n; ++i) {
      const char* source = p[0] + i * rs[0];
      const char* index = p[1] + i * rs[1];
      char* base = p[2] + i * rs[2];
      for (int64_t j = 0; j < loop.length; ++j) {
        accumulate(*target(index + j * ds[1], base), value(source + j * ds[0]));
      }
    }
    return;
  }
  for (int64_t j = 0; j < loop.length; ++j) {
    const char* source = p[0] + j * ds[0];
    const char* index = p[1] + j * ds[1];
    if (rs[1] != 0) {
      for (int64_t i = 0; i < n; ++i) {
        accumulate(*target(index + i * rs[1], p[2] + i * rs[2]), value(source + i * rs[0]));
      }
    } else if (rs[0] == sizeof(T) && rs[2] == sizeof(T)) {  // one index, contiguous rows
      T* out = target(index, p[2]);
      const T* in = reinterpret_cast<const T*>(source);
      for (int64_t i = 0; i < n; ++i) accumulate(out[i], in[i]);
    } else {
      char* row = reinterpret_cast<char*>(target(index, p[2]));
      for (int64_t i = 0; i < n; ++i) {
        accumulate(*reinterpret_cast<T*>(row + i * rs[2]), value(source + i * rs[0]));
      }
    }
  }
}

// target += alpha * source; for Bool, target |= alpha && source. Int64 wraps
// around as add does (computed unsigned: signed overflow is undefined behaviour).
template <class T>
struct AddScaled {
  T alpha;
  void operator()(T& target, T source) const {
    if constexpr (std::is_same_v<T, bool>) {
      target = target || (alpha && source);
    } else if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      target =
          static_cast<T>(static_cast<U>(target) + static_cast<U>(alpha) * static_cast<U>(source));
    } else {
      target += alpha * source;
    }
  }
};

void run_scatter_add(const ScatterLoop& loop, ScalarType dtype, const Scalar& alpha,
                     const char* op) {
  if (loop.rest.numel == 0 || loop.length == 0) return;
  // Enough work per chunk to pay for a task, and rows long enough for the
  // contiguous inner loop of scatter_rows — unless that leaves threads idle.
  constexpr int64_t kMinRow = 64;
  const int64_t per_thread = (loop.rest.numel + num_threads() - 1) / num_threads();
  const int64_t grain =
      std::max(kElementwiseGrain / loop.length + 1, std::min(per_thread, kMinRow));
  STRATA_DISPATCH_ALL_TYPES(dtype, op, [&] {
    const AddScaled<scalar_t> accumulate{scalar_as<scalar_t>(alpha, op)};
    parallel_for(0, loop.rest.numel, grain, [&](int64_t begin, int64_t end) {
      for_each_row(loop.rest, begin, end, [&](char** p, const int64_t* rs, int64_t n) {
        scatter_rows<scalar_t>(loop, p, rs, n, accumulate);
      });
    });
  });
}

}  // namespace

void check_index_range(const Tensor& index, int64_t size, int64_t dim, const char* op) {
  const IndexedDim target{0, size, dim, op};
  ElementwiseLayout layout = make_elementwise_layout(index, {});
  auto row = [&target](char** data, const int64_t* strides, int64_t n) {
    if (strides[0] == 0) n = 1;  // a broadcast index holds one value per row
    if (strides[0] == sizeof(int64_t) &&
        all_in_range(reinterpret_cast<const int64_t*>(data[0]), n, target.size)) {
      return;
    }
    for (int64_t i = 0; i < n; ++i) checked_offset(data[0] + i * strides[0], target);
  };
  run_rows(layout, row);
}

void index_select_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  DimVector index_strides(static_cast<size_t>(out.dim()), 0);
  if (out.dim() > 0 && index.dim() > 0) index_strides[dim] = index.strides()[0];
  run_gather(out, restrided(index, out.sizes(), index_strides),
             restrided(self, out.sizes(), strides_without(self, dim)),
             indexed_dim(self, dim, "strata::index_select"));
}

void gather_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  run_gather(out, index, restrided(self, out.sizes(), strides_without(self, dim)),
             indexed_dim(self, dim, "strata::gather"));
}

void scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const ScatterLoop loop =
      make_scatter_loop(index.sizes(), dim, src, src.strides(), index, index.strides(), self);
  run_scatter_add(loop, self.dtype(), 1, "strata::scatter_add_");
}

void index_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha) {
  DimVector index_strides(static_cast<size_t>(source.dim()), 0);
  if (source.dim() > 0 && index.dim() > 0) index_strides[dim] = index.strides()[0];
  const ScatterLoop loop =
      make_scatter_loop(source.sizes(), dim, source, source.strides(), index, index_strides, self);
  run_scatter_add(loop, self.dtype(), alpha, "strata::index_add_");
}

void masked_fill_kernel(const Tensor& out, const Tensor& self, const Tensor& mask,
                        const Scalar& value) {
  ElementwiseLayout layout = make_elementwise_layout(out, {&self, &mask});
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::masked_fill", [&] {
    const scalar_t fill = scalar_as<scalar_t>(value, "strata::masked_fill");
    auto row = [fill](char** data, const int64_t* strides, int64_t n) {
      if (strides[0] == sizeof(scalar_t) && strides[1] == sizeof(scalar_t) && strides[2] == 1) {
        scalar_t* out = reinterpret_cast<scalar_t*>(data[0]);
        const scalar_t* in = reinterpret_cast<const scalar_t*>(data[1]);
        const uint8_t* mask = reinterpret_cast<const uint8_t*>(data[2]);
        for (int64_t i = 0; i < n; ++i) out[i] = mask[i] ? fill : in[i];
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        const bool masked = *reinterpret_cast<const uint8_t*>(data[2] + i * strides[2]) != 0;
        *reinterpret_cast<scalar_t*>(data[0] + i * strides[0]) =
            masked ? fill : *reinterpret_cast<const scalar_t*>(data[1] + i * strides[1]);
      }
    };
    run_rows(layout, row);
  });
}

}  // namespace strata::cpu
