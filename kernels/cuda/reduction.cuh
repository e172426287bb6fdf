#pragma once

// Note [CUDA reduction tree]
// The input is seen as [outputs, group]: the kept dims index an output, the
// reduced dims an element of its group, each turned into a strided offset by
// div/mod over its own dims. A block reduces one output's group (or, when there
// are few outputs and large groups, one slice of it, the slices' partial results
// then folded by a second launch): each thread folds a strided share of the
// group, warps combine by shuffles, and the warps' results meet in shared memory.
//
// What is folded is a reducer's business, so every reduction (sums, extrema with
// or without their index, centered sums) shares the tree. A reducer R has
//   In, Acc                 the element and accumulator types (Acc trivially
//                           constructible: it lives in shared memory);
//   identity()              the accumulator of nothing;
//   center(o)               a per-output value fetched once per block (0 if unused);
//   step(acc, x, pos, c)    acc with element x at group position pos folded in;
//   combine(a, b)           two accumulators of disjoint parts, in either order;
//   shuffle_down(acc, k)    __shfl_down_sync of every field;
//   finish(o, acc, count)   writes output o of a group of `count` elements.
// Threads see their group positions interleaved, so a reducer whose result
// depends on order (the first index of a max) breaks ties by position in combine.
// Only kernels/cuda/*.cu include this.

#include <cstdint>
#include <type_traits>

#include "kernels/cpu/reduction.h"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata::gpu {

inline constexpr int kMaxReductionDims = 16;
inline constexpr int kReduceThreads = 256;
inline constexpr int64_t kSmallGroup = 32;

struct DimsOffset {
  int rank = 0;
  int64_t sizes[kMaxReductionDims];
  int64_t strides[kMaxReductionDims];  // elements

  __device__ int64_t offset(int64_t linear) const {
    // One dim (a contiguous or merged group, the common case) needs no division.
    if (rank == 1) return linear * strides[0];
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (linear % sizes[d]) * strides[d];
      linear /= sizes[d];
    }
    return off;
  }
};

// __shfl_down_sync of a 4- or 8-byte arithmetic value (bool travels as int).
template <class T>
__device__ T shuffle_value(T v, int offset) {
  if constexpr (std::is_same_v<T, bool>) {
    return __shfl_down_sync(0xffffffffu, static_cast<int>(v), offset) != 0;
  } else {
    return __shfl_down_sync(0xffffffffu, v, offset);
  }
}

// The shuffle of reducers whose accumulator is one arithmetic value.
template <class Acc>
struct ScalarShuffle {
  static __device__ Acc shuffle_down(Acc a, int offset) { return shuffle_value(a, offset); }
};

template <class R, class Acc>
__device__ Acc block_reduce(const R& r, Acc value) {
  __shared__ Acc warp_results[kReduceThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    value = r.combine(value, R::shuffle_down(value, offset));
  }
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_results[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < static_cast<int>(blockDim.x / 32) ? warp_results[lane] : r.identity();
    for (int offset = 16; offset > 0; offset /= 2) {
      value = r.combine(value, R::shuffle_down(value, offset));
    }
  }
  return value;
}

// Block (x, y) folds slice y of output x's group into partial[x * slices + y],
// or, with one slice (partial null), finishes output x.
template <class R>
__global__ void reduce_kernel(R r, const typename R::In* in, DimsOffset kept, DimsOffset group_dims,
                              int64_t group, int64_t slice_len, typename R::Acc* partial) {
  const int64_t o = blockIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * slice_len;
  const int64_t end = begin + slice_len < group ? begin + slice_len : group;
  const typename R::In* base = in + kept.offset(o);
  const double c = r.center(o);
  typename R::Acc acc = r.identity();
  for (int64_t p = begin + threadIdx.x; p < end; p += blockDim.x) {
    acc = r.step(acc, base[group_dims.offset(p)], p, c);
  }
  acc = block_reduce(r, acc);
  if (threadIdx.x != 0) return;
  if (partial) {
    partial[o * gridDim.y + blockIdx.y] = acc;
  } else {
    r.finish(o, acc, group);
  }
}

// Many outputs with small groups (a sum over a size-1 or short dim): one thread
// per output folds its group alone, instead of a block with idle threads.
template <class R>
__global__ void reduce_per_thread_kernel(R r, const typename R::In* in, DimsOffset kept,
                                         DimsOffset group_dims, int64_t group, int64_t outputs) {
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const typename R::In* base = in + kept.offset(o);
    const double c = r.center(o);
    typename R::Acc acc = r.identity();
    for (int64_t p = 0; p < group; ++p) acc = r.step(acc, base[group_dims.offset(p)], p, c);
    r.finish(o, acc, group);
  }
}

// Block x folds output x's `slices` partial results and finishes it.
template <class R>
__global__ void finish_partials_kernel(R r, const typename R::Acc* partial, int64_t slices,
                                       int64_t group) {
  const int64_t o = blockIdx.x;
  typename R::Acc acc = r.identity();
  for (int64_t s = threadIdx.x; s < slices; s += blockDim.x) {
    acc = r.combine(acc, partial[o * slices + s]);
  }
  acc = block_reduce(r, acc);
  if (threadIdx.x == 0) r.finish(o, acc, group);
}

// Splits self's dims into kept and reduced, both row-major; dims of size 1 are
// dropped (they change no offset and no position), and a dim that continues the
// previous one of its side in memory is merged into it (fewer divisions).
inline void split_dims(const Tensor& self, cpu::DimMask reduced, DimsOffset& kept,
                       DimsOffset& group_dims) {
  STRATA_CHECK(self.dim() <= kMaxReductionDims, "reduction", "tensors of more than ",
               kMaxReductionDims, " dims are not supported on CUDA (got ", self.dim(), ")");
  int64_t previous = -1;  // the last dim kept (not of size 1), and its side
  bool previous_reduced = false;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[d] == 1) continue;
    const bool is_reduced = (reduced >> d) & 1;
    DimsOffset& target = is_reduced ? group_dims : kept;
    const bool continues = previous >= 0 && previous_reduced == is_reduced &&
                           target.strides[target.rank - 1] == self.sizes()[d] * self.strides()[d];
    previous = d;
    previous_reduced = is_reduced;
    if (continues) {
      target.sizes[target.rank - 1] *= self.sizes()[d];
      target.strides[target.rank - 1] = self.strides()[d];
      continue;
    }
    target.sizes[target.rank] = self.sizes()[d];
    target.strides[target.rank] = self.strides()[d];
    ++target.rank;
  }
}

// Reduces self's `reduced` dims into `outputs` results through r (whose finish
// writes them).
template <class R>
void run_reduction(const char* op, const R& r, const Tensor& self, cpu::DimMask reduced,
                   int64_t outputs) {
  using Acc = typename R::Acc;
  if (outputs == 0) return;
  DeviceGuard guard(self.device());
  const int64_t group = self.numel() / outputs;
  DimsOffset kept, group_dims;
  split_dims(self, reduced, kept, group_dims);
  const cudaStream_t stream = stream_for(self.device());
  const auto* in = static_cast<const typename R::In*>(self.impl()->data_ptr());
  if (group == 0 || self.numel() == 0) {
    // Empty groups: each output is finished from the identity.
    const DimsOffset none{};
    reduce_kernel<R>
        <<<static_cast<unsigned>(outputs), 32, 0, stream>>>(r, in, none, none, 0, 0, nullptr);
    return check_launch(op);
  }
  if (group <= kSmallGroup && outputs >= 4 * kReduceThreads) {
    const int64_t blocks = (outputs + kReduceThreads - 1) / kReduceThreads;
    reduce_per_thread_kernel<R>
        <<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kReduceThreads, 0, stream>>>(
            r, in, kept, group_dims, group, outputs);
    return check_launch(op);
  }
  // Few outputs with large groups: slices of the group in parallel, then one pass
  // over the partial results.
  int64_t slices = 1;
  if (outputs < 264 && group >= 16 * kReduceThreads) {
    slices = (group + 16 * kReduceThreads - 1) / (16 * kReduceThreads);
    const int64_t target = (2 * 132 + outputs - 1) / outputs * 4;
    slices = slices < target ? slices : target;
  }
  const int64_t slice_len = (group + slices - 1) / slices;
  const dim3 grid(static_cast<unsigned>(outputs), static_cast<unsigned>(slices));
  if (slices == 1) {
    reduce_kernel<R>
        <<<grid, kReduceThreads, 0, stream>>>(r, in, kept, group_dims, group, slice_len, nullptr);
    return check_launch(op);
  }
  const int64_t words =
      static_cast<int64_t>((outputs * slices * sizeof(Acc) + sizeof(double) - 1) / sizeof(double));
  const Tensor partial_tensor = make_empty_tensor({words}, kFloat64, self.device(), op);
  Acc* partial = static_cast<Acc*>(partial_tensor.impl()->data_ptr());
  reduce_kernel<R>
      <<<grid, kReduceThreads, 0, stream>>>(r, in, kept, group_dims, group, slice_len, partial);
  check_launch(op);
  finish_partials_kernel<R>
      <<<static_cast<unsigned>(outputs), kReduceThreads, 0, stream>>>(r, partial, slices, group);
  check_launch(op);
}

// ---- reducers shared by the reduction files ----

using cpu::SumKind;

template <class T, class A, class Out, SumKind kKind>
struct SumReducer : ScalarShuffle<A> {
  using In = T;
  using Acc = A;
  static constexpr bool kCentered =
      kKind == SumKind::CenteredSquares || kKind == SumKind::CenteredExp;

  Out* out;
  const double* centers = nullptr;  // per output, for the centered kinds
  int64_t correction = 0;
  bool take_sqrt = false;

  __device__ double center(int64_t o) const {
    if constexpr (kCentered) return centers[o];
    return 0;
  }
  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ Acc step(Acc a, T x, int64_t, double c) const {
    if constexpr (kKind == SumKind::Sum || kKind == SumKind::Mean) return a + static_cast<Acc>(x);
    if constexpr (kKind == SumKind::AbsSum) return a + fabs(static_cast<double>(x));
    if constexpr (kKind == SumKind::SquareSum) return a + static_cast<double>(x) * x;
    if constexpr (kKind == SumKind::CenteredSquares) return a + (x - c) * (x - c);
    if constexpr (kKind == SumKind::CenteredExp) return a + exp(x - c);
  }
  __device__ void finish(int64_t o, Acc a, int64_t count) const {
    if constexpr (kKind == SumKind::Sum || kKind == SumKind::AbsSum) {
      out[o] = static_cast<Out>(a);
      return;
    }
    double value = static_cast<double>(a);
    if constexpr (kKind == SumKind::Mean) value /= static_cast<double>(count);
    if constexpr (kKind == SumKind::SquareSum) value = sqrt(value);
    if constexpr (kKind == SumKind::CenteredSquares) {
      value /= static_cast<double>(count > correction ? count - correction : 0);
      if (take_sqrt) value = sqrt(value);
    }
    if constexpr (kKind == SumKind::CenteredExp) value = log(value) + centers[o];
    out[o] = static_cast<Out>(value);
  }
};

// Max (or min) of x, or of |x|; NaN wins over every number. Bool is folded as
// int64 (shuffles move 4- or 8-byte values).
template <class T, class Out, bool kMax, bool kAbs = false>
struct ExtremumReducer : ScalarShuffle<std::conditional_t<std::is_same_v<T, bool>, int64_t, T>> {
  using In = T;
  using Acc = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
  Out* out;

  __device__ double center(int64_t) const { return 0; }
  __device__ Acc identity() const {
    if constexpr (kAbs) {
      return Acc(0);
    } else if constexpr (std::is_floating_point_v<T>) {
      return kMax ? -__builtin_huge_val() : __builtin_huge_val();
    } else if constexpr (std::is_same_v<T, bool>) {
      return kMax ? 0 : 1;
    } else {
      return kMax ? INT64_MIN : INT64_MAX;
    }
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    if constexpr (kMax) {
      return a < b ? b : a;
    } else {
      return b < a ? b : a;
    }
  }
  __device__ Acc step(Acc a, T x, int64_t, double) const {
    if constexpr (kAbs) return combine(a, fabs(x));
    return combine(a, static_cast<Acc>(x));
  }
  __device__ void finish(int64_t o, Acc a, int64_t) const { out[o] = static_cast<Out>(a); }
};

// A device array of one double per output (the centers of two-pass reductions).
inline Tensor centers_for(int64_t outputs, Device device, const char* op) {
  return make_empty_tensor({outputs}, kFloat64, device, op);
}

}  // namespace strata::gpu
