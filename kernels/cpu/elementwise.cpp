#include "kernels/cpu/elementwise.h"

#include <algorithm>

#include "kernels/cpu/elementwise_rows.h"
#include "kernels/cpu/parallel.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::cpu {

ElementwiseLayout make_elementwise_layout(const Tensor& out,
                                          std::initializer_list<const Tensor*> inputs) {
  STRATA_CHECK(inputs.size() < kMaxOperands, "elementwise", "internal: ", inputs.size(),
               " inputs, at most ", kMaxOperands - 1, " are supported");
  ElementwiseLayout layout;
  layout.num_operands = 1 + static_cast<int>(inputs.size());
  layout.numel = out.numel();
  const int64_t rank = out.dim();
  std::array<const Tensor*, kMaxOperands> operands{&out};
  int n = 1;
  for (const Tensor* t : inputs) operands[n++] = t;

  // Fast path: one row of numel elements.
  if (is_single_row(out, inputs)) {
    if (layout.numel != 1) layout.shape.push_back(layout.numel);
    for (int op = 0; op < layout.num_operands; ++op) {
      const Tensor& t = *operands[op];
      layout.data[op] = static_cast<char*>(t.data_ptr());
      if (layout.numel != 1) {
        layout.strides[op].push_back(t.numel() == 1 ? 0 : element_size(t.dtype()));
      }
    }
    return layout;
  }

  // Strides in bytes over out's shape; broadcast dims of inputs get stride 0.
  std::array<DimVector, kMaxOperands> strides;
  for (int op = 0; op < layout.num_operands; ++op) {
    const Tensor& t = *operands[op];
    const int64_t esize = element_size(t.dtype());
    const int64_t offset = rank - t.dim();
    strides[op].resize(static_cast<size_t>(rank), 0);
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.sizes()[d] != 1) strides[op][d + offset] = t.strides()[d] * esize;
    }
    layout.data[op] = static_cast<char*>(t.data_ptr());
  }

  // Merge dim d into the running dim when every operand steps through both as one.
  DimVector& shape = layout.shape;
  std::array<DimVector, kMaxOperands>& merged = layout.strides;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = out.sizes()[d];
    if (size == 1) continue;
    bool can_merge = !shape.empty();
    for (int op = 0; can_merge && op < layout.num_operands; ++op) {
      can_merge = merged[op].back() == strides[op][d] * size;
    }
    if (can_merge) {
      shape.back() *= size;
      for (int op = 0; op < layout.num_operands; ++op) merged[op].back() = strides[op][d];
    } else {
      shape.push_back(size);
      for (int op = 0; op < layout.num_operands; ++op) merged[op].push_back(strides[op][d]);
    }
  }
  return layout;
}

namespace {

// Runs the linear element range [begin, end) of the layout, row by row. The
// multi-index is computed once; after that each row steps the pointers by the
// outer dims' strides (most rows are short: a sample's last dim under vmap).
void run_range(const ElementwiseLayout& layout, int64_t begin, int64_t end, RowFn fn, void* ctx) {
  const int nops = layout.num_operands;
  const int64_t ndim = static_cast<int64_t>(layout.shape.size());
  const int64_t row_size = layout.shape[ndim - 1];
  std::array<int64_t, kMaxOperands> inner{};
  for (int op = 0; op < nops; ++op) inner[op] = layout.strides[op][ndim - 1];
  DimVector index(static_cast<size_t>(ndim), 0);
  int64_t remainder = begin;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    index[d] = remainder % layout.shape[d];
    remainder /= layout.shape[d];
  }
  // Each operand's pointer to the start of the current row.
  std::array<char*, kMaxOperands> row_start = layout.data;
  for (int op = 0; op < nops; ++op) {
    for (int64_t d = 0; d < ndim - 1; ++d) row_start[op] += index[d] * layout.strides[op][d];
  }
  std::array<char*, kMaxOperands> ptrs{};
  int64_t column = index[ndim - 1];
  while (begin < end) {
    // Only the range's first row may start mid-row.
    ptrs = row_start;
    if (column != 0) {
      for (int op = 0; op < nops; ++op) ptrs[op] += column * inner[op];
    }
    const int64_t n = std::min(row_size - column, end - begin);
    fn(ctx, ptrs.data(), inner.data(), n);
    begin += n;
    column = 0;
    for (int64_t d = ndim - 2; d >= 0; --d) {
      for (int op = 0; op < nops; ++op) row_start[op] += layout.strides[op][d];
      if (++index[d] < layout.shape[d]) break;
      for (int op = 0; op < nops; ++op) row_start[op] -= layout.strides[op][d] * layout.shape[d];
      index[d] = 0;
    }
  }
}

// Rows [begin, end) of a 2-D layout, each pointer stepping by its row stride.
void run_matrix_rows(const ElementwiseLayout& layout, int64_t begin, int64_t end, RowFn fn,
                     void* ctx) {
  const int nops = layout.num_operands;
  std::array<char*, kMaxOperands> ptrs{};
  std::array<int64_t, kMaxOperands> inner{};
  std::array<int64_t, kMaxOperands> outer{};
  for (int op = 0; op < nops; ++op) {
    inner[op] = layout.strides[op][1];
    outer[op] = layout.strides[op][0];
    ptrs[op] = layout.data[op] + begin * outer[op];
  }
  for (int64_t row = begin; row < end; ++row) {
    fn(ctx, ptrs.data(), inner.data(), layout.shape[1]);
    for (int op = 0; op < nops; ++op) ptrs[op] += outer[op];
  }
}

}  // namespace

void run_elementwise(const ElementwiseLayout& layout, RowFn fn, void* ctx) {
  if (layout.numel == 0) return;
  if (layout.shape.size() <= 1) {
    // A single row (every contiguous or one-element layout): a chunk of it is a
    // pointer offset, no multi-index to keep.
    parallel_for(0, layout.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      std::array<char*, kMaxOperands> ptrs{};
      std::array<int64_t, kMaxOperands> strides{};
      for (int op = 0; op < layout.num_operands; ++op) {
        if (!layout.shape.empty()) strides[op] = layout.strides[op][0];
        ptrs[op] = layout.data[op] + begin * strides[op];
      }
      fn(ctx, ptrs.data(), strides.data(), end - begin);
    });
    return;
  }
  if (layout.shape.size() == 2 && layout.shape[1] < kElementwiseGrain) {
    // A matrix of short rows (a batch of samples against one broadcast sample,
    // under vmap): chunks of whole rows, with no multi-index to keep.
    const int64_t rows_per_chunk = kElementwiseGrain / layout.shape[1];
    parallel_for(0, layout.shape[0], rows_per_chunk,
                 [&](int64_t begin, int64_t end) { run_matrix_rows(layout, begin, end, fn, ctx); });
    return;
  }
  parallel_for(0, layout.numel, kElementwiseGrain,
               [&](int64_t begin, int64_t end) { run_range(layout, begin, end, fn, ctx); });
}

void add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  binary_kernel(BinaryOp::Add, out, a, b, alpha);
}

void fill_kernel(const Tensor& out, const Scalar& value) {
  dispatch_all(out.dtype(), "strata::fill_", [&](auto tag) {
    using T = decltype(tag);
    const T v = value.to<T>();
    run_rows(out, {}, [v](char** data, const int64_t* strides, int64_t n) {
      if (strides[0] == sizeof(T)) {
        std::fill_n(reinterpret_cast<T*>(data[0]), n, v);
      } else {
        for (int64_t i = 0; i < n; ++i) element<T>(data[0], strides[0], i) = v;
      }
    });
  });
}

namespace {

// Note [Tiled transposing copy]
// Copying a transposed view into row-major memory (reshape or contiguous of a
// transposed tensor) walks the source against its memory order: row by row, every
// element read touches a new cache line. When the source is unit-stride along the
// output's second-to-last dim instead of its last, the last two dims are copied in
// kTile x kTile blocks, whose source lines stay in L1 while the block is written.
constexpr int64_t kTile = 32;

template <class Out, class Src>
bool copy_transposed_tiles(const ElementwiseLayout& layout) {
  const int64_t rank = static_cast<int64_t>(layout.shape.size());
  if (rank < 2) return false;
  const DimVector& out_strides = layout.strides[0];
  const DimVector& src_strides = layout.strides[1];
  if (out_strides[rank - 1] != sizeof(Out) || src_strides[rank - 2] != sizeof(Src)) return false;
  const int64_t rows = layout.shape[rank - 2], cols = layout.shape[rank - 1];
  const int64_t row_blocks = (rows + kTile - 1) / kTile;
  int64_t planes = 1;
  for (int64_t d = 0; d < rank - 2; ++d) planes *= layout.shape[d];
  const int64_t grain =
      std::max<int64_t>(1, kElementwiseGrain / (kTile * std::max<int64_t>(cols, 1)));
  parallel_for(0, planes * row_blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      // The plane's base addresses: outer dims in row-major order.
      char* out = layout.data[0];
      const char* src = layout.data[1];
      for (int64_t d = rank - 3, rest = task / row_blocks; d >= 0; --d) {
        const int64_t index = rest % layout.shape[d];
        rest /= layout.shape[d];
        out += index * out_strides[d];
        src += index * src_strides[d];
      }
      const int64_t r0 = (task % row_blocks) * kTile, r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = r0; r < r1; ++r) {
          Out* out_row = reinterpret_cast<Out*>(out + r * out_strides[rank - 2]);
          const char* src_row = src + r * sizeof(Src);
          for (int64_t c = c0; c < c1; ++c) {
            out_row[c] = static_cast<Out>(
                *reinterpret_cast<const Src*>(src_row + c * src_strides[rank - 1]));
          }
        }
      }
    }
  });
  return true;
}

}  // namespace

void copy_kernel(const Tensor& out, const Tensor& src) {
  dispatch_all(out.dtype(), "strata::copy_", [&](auto out_tag) {
    using Out = decltype(out_tag);
    dispatch_all(src.dtype(), "strata::copy_", [&](auto src_tag) {
      using Src = decltype(src_tag);
      const ElementwiseLayout layout = make_elementwise_layout(out, {&src});
      if (layout.numel == 0 || copy_transposed_tiles<Out, Src>(layout)) return;
      run_rows(layout, [](char** data, const int64_t* strides, int64_t n) {
        unary_row<Out, Src>(data, strides, n, [](Src x) { return static_cast<Out>(x); });
      });
    });
  });
}

}  // namespace strata::cpu
