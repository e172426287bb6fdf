#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/elementwise_rows.h"
#include "kernels/cpu/parallel.h"
#include "kernels/scalar_cast.h"
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
  int64_t column = index[ndim - 1];
  while (begin < end) {
    const int64_t n = std::min(row_size - column, end - begin);
    if (column == 0) {
      // The row reads the pointers where they are stepped, not a copy: copying
      // them is a wide load of narrow stores, which waits until every store before
      // it, the previous row's output included, has drained: a stall per row, and
      // short rows (a per-sample outer product's, under vmap(grad)) are many.
      fn(ctx, row_start.data(), inner.data(), n);
    } else {
      // Only the range's first row may start mid-row.
      std::array<char*, kMaxOperands> ptrs = row_start;
      for (int op = 0; op < nops; ++op) ptrs[op] += column * inner[op];
      fn(ctx, ptrs.data(), inner.data(), n);
    }
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

// Note [Streaming large outputs]
// An output much larger than the caches (a per-sample gradient of a wide layer:
// [32, 128, 9216] floats are 151 MB) is written at DRAM speed, and an ordinary
// store first reads the line it writes. Rows of such an output are computed a
// chunk at a time into a buffer that stays in L1 and copied out with
// non-temporal stores, which skip that read and so nearly halve the time of the
// write. Below the threshold ordinary stores are as fast, and they leave the
// data in the last-level cache for whatever reads it next. Short chunks stream
// faster than long ones, down to about 1 KB. (Streaming straight
// from the multiply would save the copy, but the row functions write ordinary
// memory.)
constexpr int64_t kStreamingOutputBytes = int64_t{64} << 20;
constexpr int64_t kStreamChunkBytes = 1024;

// Non-temporal stores combine into whole lines in the write-combining buffers
// whatever their width, so SSE2's (every x86-64 has them) stream as fast as
// AVX-512's.
void copy_streaming(char* dst, const char* src, int64_t bytes) {
#if defined(__x86_64__)
  constexpr int64_t kWidth = sizeof(__m128i);
  const auto misalignment = static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst) % kWidth);
  const int64_t head = std::min(bytes, (kWidth - misalignment) % kWidth);
  std::memcpy(dst, src, static_cast<size_t>(head));
  int64_t i = head;
  for (; i + kWidth <= bytes; i += kWidth) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  std::memcpy(dst + i, src + i, static_cast<size_t>(bytes - i));
#else
  std::memcpy(dst, src, static_cast<size_t>(bytes));
#endif
}

struct StreamedRows {
  RowFn fn;
  void* ctx;
  int num_operands;
};

// A row of a streamed output: the wrapped row function writes each chunk into
// the buffer, the inputs' pointers step past it. The pointers are the driver's
// own (Note [Elementwise loops]) and are put back before returning.
void run_streamed_row(void* ctx, char** data, const int64_t* strides, int64_t n) {
  const StreamedRows& rows = *static_cast<const StreamedRows*>(ctx);
  alignas(64) char buffer[kStreamChunkBytes];
  char* const out = data[0];
  const int64_t chunk = kStreamChunkBytes / strides[0];
  for (int64_t done = 0; done < n; done += chunk) {
    const int64_t m = std::min(chunk, n - done);
    data[0] = buffer;
    rows.fn(rows.ctx, data, strides, m);
    copy_streaming(out + done * strides[0], buffer, m * strides[0]);
    for (int op = 1; op < rows.num_operands; ++op) data[op] += m * strides[op];
  }
  data[0] = out;
  for (int op = 1; op < rows.num_operands; ++op) data[op] -= n * strides[op];
}

// Streaming stores are weakly ordered: each task makes its own visible before it
// ends (once per task: a fence per row waited for every row to reach memory).
void fence_streaming_stores() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// The rows of the layout in parallel chunks of about kElementwiseGrain elements.
void run_chunks(const ElementwiseLayout& layout, RowFn fn, void* ctx) {
  const bool fence = layout.stream_output;
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
      if (fence) fence_streaming_stores();
    });
    return;
  }
  if (layout.shape.size() == 2 && layout.shape[1] < kElementwiseGrain) {
    // A matrix of short rows (a batch of samples against one broadcast sample,
    // under vmap): chunks of whole rows, with no multi-index to keep.
    const int64_t rows_per_chunk = kElementwiseGrain / layout.shape[1];
    parallel_for(0, layout.shape[0], rows_per_chunk, [&](int64_t begin, int64_t end) {
      run_matrix_rows(layout, begin, end, fn, ctx);
      if (fence) fence_streaming_stores();
    });
    return;
  }
  parallel_for(0, layout.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    run_range(layout, begin, end, fn, ctx);
    if (fence) fence_streaming_stores();
  });
}

}  // namespace

bool output_streams(const ElementwiseLayout& layout, int64_t out_element_size) {
  return !layout.shape.empty() && layout.strides[0].back() == out_element_size &&
         layout.numel * out_element_size >= kStreamingOutputBytes;
}

void run_elementwise(const ElementwiseLayout& layout, RowFn fn, void* ctx) {
  if (layout.numel == 0) return;
  if (!layout.stream_output) {
    run_chunks(layout, fn, ctx);
    return;
  }
  StreamedRows streamed{fn, ctx, layout.num_operands};
  run_chunks(layout, &run_streamed_row, &streamed);
}

void add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  binary_kernel(BinaryOp::Add, out, a, b, alpha);
}

void fill_kernel(const Tensor& out, const Scalar& value) {
  dispatch_all(out.dtype(), "strata::fill_", [&](auto tag) {
    using T = decltype(tag);
    const T v = scalar_as<T>(value, "strata::fill_");
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
// transposed or permuted tensor) walks the source against its memory order: row by
// row, every element read touches a new cache line. When the source steps less
// along one of the output's outer dims than along its last (the row dim: the outer
// dim of least step), the row dim and the last dim are copied in kTile x kTile
// blocks, whose source lines are used whole while the block is written. A
// same-dtype copy of 4- or 8-byte values (Float32, Float64, Int64: their bits, as
// float or double lanes) from a source unit-stride along the row dim moves each
// block as P x P squares (P lanes a packet): P packets loaded along the row dim,
// transposed in registers, stored along the output's rows. Every load and store
// covers a whole packet, where an element-by-element loop touches P lines for P
// values and, at power-of-two strides, keeps evicting them from the same cache
// set. Tasks are whole blocks, so the bits never depend on the threads.
constexpr int64_t kTile = 64;

// Converts one element. A floating value without an integer equivalent (NaN, inf,
// out of range: the cast would be undefined behaviour) becomes 0 and raises the
// flag; copy_kernel then throws.
template <class Out, class Src>
struct Convert {
  std::atomic<bool>* out_of_range;
  Out operator()(Src x) const {
    if constexpr (std::is_floating_point_v<Src> && std::is_integral_v<Out> &&
                  !std::is_same_v<Out, bool>) {
      if (!has_integer_equivalent<Out>(x)) {
        out_of_range->store(true, std::memory_order_relaxed);
        return Out(0);
      }
    }
    return static_cast<Out>(x);
  }
};

// Output rows [r0, r1) of the row dim by columns [c0, c1) of the last dim.
struct TileBounds {
  int64_t r0, r1, c0, c1;
};
// Byte strides of the output's rows and the source's rows and columns.
struct TileStrides {
  int64_t out_row, src_row, src_col;
};

// A tile copied element by element, each converted on its own.
template <class Out, class Src>
void copy_tile_elements(char* out, const char* src, const TileStrides& s, TileBounds t,
                        const Convert<Out, Src>& convert) {
  for (int64_t r = t.r0; r < t.r1; ++r) {
    Out* out_row = reinterpret_cast<Out*>(out + r * s.out_row);
    const char* src_row = src + r * s.src_row;
    for (int64_t c = t.c0; c < t.c1; ++c) {
      out_row[c] = convert(*reinterpret_cast<const Src*>(src_row + c * s.src_col));
    }
  }
}

template <class T>
using PacketOf = typename Eigen::internal::packet_traits<T>::type;
// A same-dtype copy moves 4- and 8-byte values as the bits of float or double lanes.
template <class T>
using LaneOf = std::conditional_t<sizeof(T) == 4, float, double>;

// Eigen's PacketBlock takes the packet type as a template argument, which drops
// its may_alias attribute; Eigen's own ptranspose uses the block the same way.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
template <class Out, class Src>
void copy_tile(char* out, const char* src, const TileStrides& s, TileBounds t,
               const Convert<Out, Src>& convert) {
  if constexpr (std::is_same_v<Out, Src> && sizeof(Out) >= 4) {
    if (s.src_row != sizeof(Out)) return copy_tile_elements(out, src, s, t, convert);
    using Lane = LaneOf<Out>;
    constexpr int P = kPacketSize<Lane>;
    const int64_t r_end = t.r0 + (t.r1 - t.r0) / P * P, c_end = t.c0 + (t.c1 - t.c0) / P * P;
    for (int64_t r = t.r0; r < r_end; r += P) {
      const char* src_rows = src + r * s.src_row;
      for (int64_t c = t.c0; c < c_end; c += P) {
        Eigen::internal::PacketBlock<PacketOf<Lane>, P> square;
        for (int k = 0; k < P; ++k) {
          square.packet[k] = Eigen::internal::ploadu<PacketOf<Lane>>(
              reinterpret_cast<const Lane*>(src_rows + (c + k) * s.src_col));
        }
        Eigen::internal::ptranspose(square);
        for (int k = 0; k < P; ++k) {
          Eigen::internal::pstoreu(reinterpret_cast<Lane*>(out + (r + k) * s.out_row) + c,
                                   square.packet[k]);
        }
      }
    }
    copy_tile_elements(out, src, s, {t.r0, r_end, c_end, t.c1}, convert);
    t.r0 = r_end;
  }
  copy_tile_elements(out, src, s, t, convert);
}
#pragma GCC diagnostic pop

template <class Out, class Src>
bool copy_transposed_tiles(const ElementwiseLayout& layout, const Convert<Out, Src>& convert) {
  const int64_t rank = static_cast<int64_t>(layout.shape.size());
  if (rank < 2) return false;
  const DimVector& out_strides = layout.strides[0];
  const DimVector& src_strides = layout.strides[1];
  const int64_t last = rank - 1;
  if (out_strides[last] != sizeof(Out)) return false;
  // The row dim: the outer dim along which the source steps least (the innermost
  // such), when that is less than along the last dim.
  int64_t row = -1;
  for (int64_t d = last - 1; d >= 0; --d) {
    if (src_strides[d] != 0 && (row < 0 || std::abs(src_strides[d]) < std::abs(src_strides[row]))) {
      row = d;
    }
  }
  if (row < 0 || std::abs(src_strides[row]) >= std::abs(src_strides[last])) return false;
  const int64_t rows = layout.shape[row], cols = layout.shape[last];
  const int64_t row_blocks = (rows + kTile - 1) / kTile;
  const int64_t planes = layout.numel / (rows * cols);
  const int64_t grain = std::max<int64_t>(
      1, kElementwiseGrain / (std::min(rows, kTile) * std::max<int64_t>(cols, 1)));
  parallel_for(0, planes * row_blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      // The plane's base addresses: the dims other than row and last, row-major.
      char* out = layout.data[0];
      const char* src = layout.data[1];
      for (int64_t d = last - 1, rest = task / row_blocks; d >= 0; --d) {
        if (d == row) continue;
        const int64_t index = rest % layout.shape[d];
        rest /= layout.shape[d];
        out += index * out_strides[d];
        src += index * src_strides[d];
      }
      const int64_t r0 = (task % row_blocks) * kTile, r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        copy_tile(out, src, {out_strides[row], src_strides[row], src_strides[last]},
                  TileBounds{r0, r1, c0, std::min(cols, c0 + kTile)}, convert);
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
      std::atomic<bool> out_of_range{false};
      const Convert<Out, Src> convert{&out_of_range};
      ElementwiseLayout layout = make_elementwise_layout(out, {&src});
      if (layout.numel == 0) return;
      if (!copy_transposed_tiles(layout, convert)) {
        layout.stream_output = output_streams(layout, sizeof(Out));
        run_rows(layout, [&convert](char** data, const int64_t* strides, int64_t n) {
          unary_row<Out, Src>(data, strides, n, convert);
        });
      }
      STRATA_CHECK(!out_of_range.load(std::memory_order_relaxed), "strata::copy_", "a ",
                   src.dtype(), " source of shape ", shape_string(src.sizes()),
                   " holds NaN, inf or a value out of range, which has no ", out.dtype(),
                   " equivalent");
    });
  });
}

}  // namespace strata::cpu
