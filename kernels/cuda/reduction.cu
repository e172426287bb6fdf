// Reductions on CUDA (kernels/cuda/reduction.h).
//
// Note [CUDA reduction tree]
// The input is seen as [outputs, group]: the kept dims index an output, the
// reduced dims an element of its group, each turned into a strided offset by
// div/mod over its own dims. A block reduces one output's group (or, when there
// are few outputs and large groups, one slice of it, the slices' partial results
// then reduced by a second launch): each thread folds a strided share of the
// group, warps combine by shuffles, and the warps' results meet in shared memory.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/reduction.h"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

constexpr int kMaxDims = 16;
constexpr int kThreads = 256;

struct DimsOffset {
  int rank = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];  // elements

  __device__ int64_t offset(int64_t linear) const {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (linear % sizes[d]) * strides[d];
      linear /= sizes[d];
    }
    return off;
  }
};

template <class Acc>
struct SumOp {
  static __device__ Acc identity() { return Acc(0); }
  static __device__ Acc combine(Acc a, Acc b) { return a + b; }
};
template <class Acc>
struct ProdOp {
  static __device__ Acc identity() { return Acc(1); }
  static __device__ Acc combine(Acc a, Acc b) { return a * b; }
};
// NaN wins either way: a NaN on the left stays, one on the right is taken.
template <class Acc, bool kMax>
struct ExtremumOp {
  static __device__ Acc identity() {
    if constexpr (std::is_floating_point_v<Acc>) {
      return kMax ? -__builtin_huge_val() : __builtin_huge_val();
    } else if constexpr (std::is_same_v<Acc, bool>) {
      return !kMax;
    } else {
      return kMax ? INT64_MIN : INT64_MAX;
    }
  }
  static __device__ Acc combine(Acc a, Acc b) {
    if constexpr (std::is_floating_point_v<Acc>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    if constexpr (kMax)
      return a < b ? b : a;
    else
      return b < a ? b : a;
  }
};

template <class Op, class Acc>
__device__ Acc block_reduce(Acc value) {
  __shared__ Acc warp_results[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    value = Op::combine(value, __shfl_down_sync(0xffffffffu, value, offset));
  }
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_results[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < static_cast<int>(blockDim.x / 32) ? warp_results[lane] : Op::identity();
    for (int offset = 16; offset > 0; offset /= 2) {
      value = Op::combine(value, __shfl_down_sync(0xffffffffu, value, offset));
    }
  }
  return value;
}

// Block (x, y) folds slice y of output x's group into partial[x * slices + y],
// or, with one slice, writes finish(acc) to out[x].
template <class Op, class In, class Acc, class Out>
__global__ void reduce_kernel(const In* in, DimsOffset kept, DimsOffset group_dims, int64_t group,
                              int64_t slice_len, Out* out, Acc* partial, double divisor) {
  const int64_t o = blockIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * slice_len;
  const int64_t end = begin + slice_len < group ? begin + slice_len : group;
  const In* base = in + kept.offset(o);
  Acc acc = Op::identity();
  for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x) {
    acc = Op::combine(acc, static_cast<Acc>(base[group_dims.offset(r)]));
  }
  acc = block_reduce<Op>(acc);
  if (threadIdx.x != 0) return;
  if (partial) {
    partial[o * gridDim.y + blockIdx.y] = acc;
  } else {
    out[o] = static_cast<Out>(divisor == 1.0 ? acc : static_cast<Acc>(acc / divisor));
  }
}

// Splits self's dims into kept and reduced, both row-major.
void split_dims(const Tensor& self, DimMask reduced, DimsOffset& kept, DimsOffset& group_dims) {
  STRATA_CHECK(self.dim() <= kMaxDims, "reduction", "tensors of more than ", kMaxDims,
               " dims are not supported on CUDA (got ", self.dim(), ")");
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[d] == 1) continue;
    DimsOffset& target = (reduced >> d) & 1 ? group_dims : kept;
    target.sizes[target.rank] = self.sizes()[d];
    target.strides[target.rank] = self.strides()[d];
    ++target.rank;
  }
}

template <class Op, class In, class Acc, class Out>
void run_reduction(const char* op, const Tensor& out, const Tensor& self, DimMask reduced,
                   bool mean) {
  DeviceGuard guard(self.device());
  check_same_device(op, out.device(), self.device());
  const int64_t outputs = out.numel();
  if (outputs == 0) return;
  const int64_t group = self.numel() / outputs;
  DimsOffset kept, group_dims;
  split_dims(self, reduced, kept, group_dims);
  const cudaStream_t stream = stream_for(self.device());
  const In* in = static_cast<const In*>(self.impl()->data_ptr());
  Out* result = static_cast<Out*>(out.impl()->data_ptr());
  const double divisor = mean ? static_cast<double>(group) : 1.0;
  if (group == 0 || self.numel() == 0) {
    // Empty groups: the identity (sum 0, prod 1; a mean of nothing is 0 / 0, NaN).
    const DimsOffset none{};
    reduce_kernel<Op, In, Acc, Out><<<static_cast<unsigned>(outputs), 32, 0, stream>>>(
        in, none, none, 0, 0, result, nullptr, divisor);
    return check_launch(op);
  }
  // Few outputs with large groups: slices of the group in parallel, then one pass
  // over the partial results.
  int64_t slices = 1;
  if (outputs < 264 && group >= 16 * kThreads) {
    slices = (group + 16 * kThreads - 1) / (16 * kThreads);
    const int64_t target = (2 * 132 + outputs - 1) / outputs * 4;
    slices = slices < target ? slices : target;
  }
  const int64_t slice_len = (group + slices - 1) / slices;
  const dim3 grid(static_cast<unsigned>(outputs), static_cast<unsigned>(slices));
  if (slices == 1) {
    reduce_kernel<Op, In, Acc, Out><<<grid, kThreads, 0, stream>>>(
        in, kept, group_dims, group, slice_len, result, nullptr, divisor);
    return check_launch(op);
  }
  const Tensor partial_tensor =
      make_empty_tensor({outputs, slices}, dtype_of<Acc>(), self.device(), op);
  Acc* partial = static_cast<Acc*>(partial_tensor.impl()->data_ptr());
  reduce_kernel<Op, In, Acc, Out>
      <<<grid, kThreads, 0, stream>>>(in, kept, group_dims, group, slice_len, result, partial, 1.0);
  check_launch(op);
  DimsOffset rows{};
  rows.rank = 1;
  rows.sizes[0] = outputs;
  rows.strides[0] = slices;
  DimsOffset cols{};
  cols.rank = 1;
  cols.sizes[0] = slices;
  cols.strides[0] = 1;
  reduce_kernel<Op, Acc, Acc, Out><<<static_cast<unsigned>(outputs), kThreads, 0, stream>>>(
      partial, rows, cols, slices, slices, result, nullptr, divisor);
  check_launch(op);
}

// Sums: Bool and Int64 into Int64, Float32 through a double accumulator.
template <template <class> class Op>
void sum_like(const char* op, const Tensor& out, const Tensor& self, DimMask reduced, bool mean) {
  dispatch_all(self.dtype(), op, [&](auto tag) {
    using In = decltype(tag);
    if constexpr (std::is_floating_point_v<In>) {
      run_reduction<Op<double>, In, double, In>(op, out, self, reduced, mean);
    } else {
      run_reduction<Op<int64_t>, In, int64_t, int64_t>(op, out, self, reduced, mean);
    }
  });
}

template <bool kMax>
void extremum(const char* op, const Tensor& out, const Tensor& self, DimMask reduced) {
  dispatch_all(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    // Bool shuffles as int64 (shuffles need 4 or 8 byte values).
    using Acc = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
    run_reduction<ExtremumOp<Acc, kMax>, T, Acc, T>(op, out, self, reduced, false);
  });
}

}  // namespace

void sum_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  sum_like<SumOp>("strata::sum", out, self, reduced, false);
}
void mean_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  sum_like<SumOp>("strata::mean", out, self, reduced, true);
}
void prod_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  sum_like<ProdOp>("strata::prod", out, self, reduced, false);
}
void amax_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  extremum<true>("strata::amax", out, self, reduced);
}
void amin_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  extremum<false>("strata::amin", out, self, reduced);
}

}  // namespace strata::gpu
