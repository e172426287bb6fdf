#pragma once

// The reduction driver, shared by the reduction kernels (kernels/cpu/reduction*.cpp
// only: it is template-heavy, and no other layer needs it).

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/reduction.h"
#include "tensor/small_vector.h"

namespace strata::cpu::reduction_detail {

// Note [Reduction loops]
// The input is seen as two index spaces: the kept dims (one output element each)
// and the reduced dims (the "group" of input elements folded into one output
// element). In each space, size-1 dims are dropped and neighbouring dims that step
// through memory as one are merged; unless the group's order matters (arg
// reductions report a position in it), the reduced dims are also sorted so the
// innermost has the smallest stride. Then one of two loops runs:
//  - rows: for each output element, the group is walked as rows of its innermost
//    dim; a row of stride 1 (a reduction over the innermost contiguous dim) is
//    folded by the reducer's vectorised `fold_contiguous`, other rows (sliced,
//    expanded, transposed inputs) by its scalar `step`, reading in place.
//  - columns: when the innermost kept dim is contiguous and the group is not, a
//    block of up to kColumnWidth output elements accumulates whole input rows at a
//    time (acc[j] = step(acc[j], row[j]), four rows per pass), which the compiler
//    vectorises along the kept dim: the reduction over outer dims reads memory in
//    long runs.
// Work is split over output elements (or column blocks) above kElementwiseGrain;
// when there are few of them but long groups, each group is also cut into blocks
// folded in parallel and combined in order. The blocks depend only on the shape,
// never on the thread count, so results are reproducible.
//
// A reducer R provides: In, Acc; identity(); step(acc, x, position, center);
// fold_contiguous(acc, ptr, n, first_position, center); combine(earlier, later);
// center(o), a per-output constant of two-pass reductions (0 otherwise); and
// finish(o, acc, group_numel, center), which writes output element o.
struct ReductionGeometry {
  DimVector out_sizes, out_strides;      // kept dims; input strides in elements
  DimVector group_sizes, group_strides;  // reduced dims, never empty
  int64_t out_numel = 1;
  int64_t group_numel = 1;
};

ReductionGeometry make_reduction_geometry(const Tensor& self, DimMask reduced,
                                          bool keep_group_order);

// Widest block of kept columns folded together: wide blocks read the input in
// long contiguous runs, which matters more than a small accumulator.
inline constexpr int64_t kColumnWidth = 4096;
// Enough tasks to keep a many-core machine busy when groups are split.
inline constexpr int64_t kTargetTasks = 64;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Walks the first `ndim` dims of a strided index space in row-major order.
class StridedCursor {
 public:
  StridedCursor(const DimVector& sizes, const DimVector& strides, size_t ndim, int64_t linear)
      : sizes_(sizes.data()), strides_(strides.data()), index_(ndim, 0) {
    for (size_t d = ndim; d-- > 0;) {
      index_[d] = linear % sizes_[d];
      linear /= sizes_[d];
      offset_ += index_[d] * strides_[d];
    }
  }
  int64_t offset() const { return offset_; }
  void advance() {
    for (size_t d = index_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < sizes_[d]) return;
      offset_ -= index_[d] * strides_[d];
      index_[d] = 0;
    }
  }

 private:
  const int64_t* sizes_;
  const int64_t* strides_;
  DimVector index_;
  int64_t offset_ = 0;
};

// How many blocks each group is cut into: 1 unless there are too few tasks to
// share out and the groups are long. `width` is the input elements per group position.
inline int64_t group_blocks(int64_t base_tasks, int64_t group_numel, int64_t width) {
  if (base_tasks >= kTargetTasks || base_tasks * group_numel * width < 2 * kElementwiseGrain) {
    return 1;
  }
  const int64_t min_block = ceil_div(kElementwiseGrain, width);
  // A group smaller than one block is still one block.
  return std::clamp(ceil_div(kTargetTasks, base_tasks), int64_t{1},
                    std::max<int64_t>(1, group_numel / min_block));
}

// Scratch accumulators: never a std::vector<bool>, whose elements share bytes and so
// cannot be written from several threads.
template <class Acc>
std::unique_ptr<Acc[]> partial_buffer(int64_t n) {
  return std::unique_ptr<Acc[]>(new Acc[static_cast<size_t>(n)]);
}

// Folds positions [begin, end) of one group, whose element 0 is at `base`.
template <class R>
typename R::Acc fold_group(const R& r, const typename R::In* base, const ReductionGeometry& g,
                           int64_t begin, int64_t end, double center) {
  typename R::Acc acc = r.identity();
  const size_t inner = g.group_sizes.size() - 1;
  const int64_t row_size = g.group_sizes[inner];
  const int64_t stride = g.group_strides[inner];
  StridedCursor rows(g.group_sizes, g.group_strides, inner, begin / row_size);
  for (int64_t pos = begin, col = begin % row_size; pos < end; col = 0, rows.advance()) {
    const int64_t n = std::min(row_size - col, end - pos);
    const typename R::In* p = base + rows.offset() + col * stride;
    if (stride == 1) {
      acc = r.fold_contiguous(acc, p, n, pos, center);
    } else {
      for (int64_t k = 0; k < n; ++k) acc = r.step(acc, p[k * stride], pos + k, center);
    }
    pos += n;
  }
  return acc;
}

template <class R>
void reduce_rows(const R& r, const typename R::In* in, const ReductionGeometry& g) {
  const size_t out_rank = g.out_sizes.size();
  const int64_t blocks = group_blocks(g.out_numel, g.group_numel, 1);
  if (blocks == 1) {
    const int64_t grain =
        std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, g.group_numel));
    parallel_for(0, g.out_numel, grain, [&](int64_t begin, int64_t end) {
      StridedCursor out(g.out_sizes, g.out_strides, out_rank, begin);
      for (int64_t o = begin; o < end; ++o, out.advance()) {
        const double c = r.center(o);
        r.finish(o, fold_group(r, in + out.offset(), g, 0, g.group_numel, c), g.group_numel, c);
      }
    });
    return;
  }
  const int64_t block = ceil_div(g.group_numel, blocks);
  const auto partial = partial_buffer<typename R::Acc>(g.out_numel * blocks);
  parallel_for(0, g.out_numel * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / blocks, first = (t % blocks) * block;
      const StridedCursor out(g.out_sizes, g.out_strides, out_rank, o);
      partial[t] = fold_group(r, in + out.offset(), g, first,
                              std::min(g.group_numel, first + block), r.center(o));
    }
  });
  for (int64_t o = 0; o < g.out_numel; ++o) {
    typename R::Acc acc = partial[o * blocks];
    for (int64_t b = 1; b < blocks; ++b) acc = r.combine(acc, partial[o * blocks + b]);
    r.finish(o, acc, g.group_numel, r.center(o));
  }
}

// Folds group positions [begin, end) into acc[0, width) for the output elements
// o0 .. o0 + width - 1, whose inputs start at `base` and lie next to each other.
// Four input rows per pass over acc: a quarter of the accumulator traffic.
template <class R>
void fold_columns(const R& r, typename R::Acc* acc, const typename R::In* base, int64_t width,
                  int64_t o0, const ReductionGeometry& g, int64_t begin, int64_t end) {
  using In = typename R::In;
  for (int64_t j = 0; j < width; ++j) acc[j] = r.identity();
  StridedCursor rows(g.group_sizes, g.group_strides, g.group_sizes.size(), begin);
  int64_t pos = begin;
  for (; pos + 4 <= end; pos += 4) {
    std::array<const In*, 4> row;
    for (const In*& p : row) {
      p = base + rows.offset();
      rows.advance();
    }
    for (int64_t j = 0; j < width; ++j) {
      const double c = r.center(o0 + j);
      typename R::Acc a = acc[j];
      for (int k = 0; k < 4; ++k) a = r.step(a, row[k][j], pos + k, c);
      acc[j] = a;
    }
  }
  for (; pos < end; ++pos, rows.advance()) {
    const In* row = base + rows.offset();
    for (int64_t j = 0; j < width; ++j) acc[j] = r.step(acc[j], row[j], pos, r.center(o0 + j));
  }
}

template <class R>
void reduce_columns(const R& r, const typename R::In* in, const ReductionGeometry& g) {
  using Acc = typename R::Acc;
  const size_t outer_rank = g.out_sizes.size() - 1;
  const int64_t inner = g.out_sizes.back();
  const int64_t width = std::min(inner, kColumnWidth);
  const int64_t chunks = ceil_div(inner, width);
  const int64_t base_tasks = g.out_numel / inner * chunks;
  const int64_t blocks = group_blocks(base_tasks, g.group_numel, width);
  const int64_t block = ceil_div(g.group_numel, blocks);
  // Task t folds block t % blocks of the group for column chunk c = (t / blocks) %
  // chunks of the outer (kept) index t / (blocks * chunks).
  auto fold_task = [&](int64_t t, Acc* acc) {
    const int64_t outer = t / (blocks * chunks), col0 = (t / blocks) % chunks * width;
    const StridedCursor out(g.out_sizes, g.out_strides, outer_rank, outer);
    const int64_t o0 = outer * inner + col0, n = std::min(width, inner - col0);
    const int64_t first = t % blocks * block;
    fold_columns(r, acc, in + out.offset() + col0, n, o0, g, first,
                 std::min(g.group_numel, first + block));
    return std::pair{o0, n};
  };
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (width * block));
  if (blocks == 1) {
    parallel_for(0, base_tasks, grain, [&](int64_t begin, int64_t end) {
      const auto acc = partial_buffer<Acc>(width);
      for (int64_t t = begin; t < end; ++t) {
        const auto [o0, n] = fold_task(t, acc.get());
        for (int64_t j = 0; j < n; ++j) {
          r.finish(o0 + j, acc[j], g.group_numel, r.center(o0 + j));
        }
      }
    });
    return;
  }
  const auto partial = partial_buffer<Acc>(base_tasks * blocks * width);
  parallel_for(0, base_tasks * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) fold_task(t, partial.get() + t * width);
  });
  // Output element o = outer * inner + col sits at column col % width of base
  // task outer * chunks + col / width.
  parallel_for(0, g.out_numel, std::max<int64_t>(1, kElementwiseGrain / blocks),
               [&](int64_t begin, int64_t end) {
                 for (int64_t o = begin; o < end; ++o) {
                   const int64_t col = o % inner;
                   const int64_t task = o / inner * chunks + col / width;
                   const Acc* acc = partial.get() + task * blocks * width + col % width;
                   Acc total = acc[0];
                   for (int64_t b = 1; b < blocks; ++b) total = r.combine(total, acc[b * width]);
                   r.finish(o, total, g.group_numel, r.center(o));
                 }
               });
}

// Runs reducer r over self (of dtype R::In) with the loop its geometry suits.
template <class R>
void run_reduction(const R& r, const typename R::In* in, const ReductionGeometry& g) {
  if (g.out_numel == 0) return;
  if (g.group_numel == 0) {
    for (int64_t o = 0; o < g.out_numel; ++o) r.finish(o, r.identity(), 0, r.center(o));
    return;
  }
  if (g.group_numel == 1) {
    // Reduced dims of extent 1 (a per-sample bias gradient under vmap): each
    // output is one step from its element, with no fold and no accumulator.
    parallel_for(0, g.out_numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      StridedCursor out(g.out_sizes, g.out_strides, g.out_sizes.size(), begin);
      for (int64_t o = begin; o < end; ++o, out.advance()) {
        const double c = r.center(o);
        r.finish(o, r.step(r.identity(), in[out.offset()], 0, c), 1, c);
      }
    });
    return;
  }
  const bool columns =
      !g.out_sizes.empty() && g.out_strides.back() == 1 && g.group_strides.back() != 1;
  if (columns) {
    reduce_columns(r, in, g);
  } else {
    reduce_rows(r, in, g);
  }
}

}  // namespace strata::cpu::reduction_detail
