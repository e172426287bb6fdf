#pragma once

// Note [The CUDA elementwise launcher]
// Every CUDA elementwise kernel goes through launch_elementwise: the output and
// its inputs are laid over the output's shape by the CPU's layout
// (cpu::make_elementwise_layout: broadcast inputs get stride 0, dims contiguous
// across all operands are merged), then
//  - a layout of one dense row (every operand contiguous or broadcast) runs the
//    contiguous kernel: each thread handles kVec consecutive elements with one
//    vector load per operand when the operands are aligned for it;
//  - anything else runs the strided kernel, which turns a linear index into
//    per-operand byte offsets (32-bit index arithmetic when the tensor allows).
//    When the innermost dim is a dense row for the output and every input
//    (contiguous, or one element for the whole row: an outer product's or a
//    row broadcast's operands) and every row starts aligned for vector access,
//    each thread handles kVec consecutive elements of a row: one split of the
//    index into coordinates and one vector store per kVec elements.
// A 0-dim CPU input (a C++ number) is read on the host and passed by value.
// Only kernels/cuda/*.cu include this.

#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::gpu {

inline constexpr int kMaxDims = 10;
inline constexpr int kVec = 4;
inline constexpr int kBlock = 256;

// One input: device memory with byte strides over the layout's dims (all 0 when
// broadcast), or a value read on the host (data null).
template <class T>
struct Input {
  const char* data;
  T value;
  bool
      broadcast;  // dense layouts: the one element at data serves every index; row packs: every row
  int64_t strides[kMaxDims];
};

template <class T>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <class T>
__device__ __forceinline__ T load_dense(const Input<T>& in, int64_t i) {
  if (!in.data) return in.value;
  return reinterpret_cast<const T*>(in.data)[in.broadcast ? 0 : i];
}

template <class T>
__device__ __forceinline__ Pack<T> load_pack(const Input<T>& in, int64_t p) {
  if (in.data && !in.broadcast) return reinterpret_cast<const Pack<T>*>(in.data)[p];
  const T v = load_dense(in, 0);
  Pack<T> pack;
#pragma unroll
  for (int j = 0; j < kVec; ++j) pack.v[j] = v;
  return pack;
}

template <class Index, class T>
__device__ __forceinline__ T load_at(const Input<T>& in, Index offset) {
  if (!in.data) return in.value;
  return *reinterpret_cast<const T*>(in.data + offset);
}

template <bool kVectorized, class Out, class F, class... In>
__global__ void contiguous_kernel(int64_t n, Out* out, F f, Input<In>... in) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (kVectorized) {
    const int64_t packs = n / kVec;
    auto compute = [&](const Pack<In>&... x) {
      Pack<Out> r;
#pragma unroll
      for (int j = 0; j < kVec; ++j) r.v[j] = f(x.v[j]...);
      return r;
    };
    for (int64_t p = start; p < packs; p += step) {
      reinterpret_cast<Pack<Out>*>(out)[p] = compute(load_pack(in, p)...);
    }
    start += packs * kVec;
  }
  for (int64_t i = start; i < n; i += step) out[i] = f(load_dense(in, i)...);
}

// Division of a 32-bit index by a fixed divisor d < 2^31 as a multiply and a
// shift (Granlund and Montgomery's method with shift = ceil(log2 d)): for
// n < 2^31, n / d = (umulhi(n, magic) + n) >> shift. The strided kernel divides
// by every dim's size for every element; a hardware division costs ~20 instructions.
struct FastDivider {
  uint32_t magic = 1;
  uint32_t shift = 0;

  static FastDivider of(int64_t d) {
    FastDivider f;
    while ((int64_t{1} << f.shift) < d) ++f.shift;
    f.magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << f.shift) - d)) / d + 1);
    return f;
  }
  __device__ __forceinline__ uint32_t divide(uint32_t n) const {
    return (__umulhi(n, magic) + n) >> shift;
  }
};

struct Sizes {
  int rank;
  int64_t v[kMaxDims];
  FastDivider div[kMaxDims];  // of v, for 32-bit indices
};

// Each operand's byte offset accumulates in a register as the linear index is
// split into coordinates (innermost first); the dim loop has a compile-time bound
// so that no coordinate array goes to local memory. Returns the output's offset.
template <class Index, class Out, class... In, size_t... I>
__device__ __forceinline__ Index split_index(Index i, const Sizes& sizes, const Input<Out>& out,
                                             Index (&offsets)[sizeof...(In) + 1],
                                             std::index_sequence<I...>, const Input<In>&... in) {
  Index rest = i;
  Index out_offset = 0;
#pragma unroll
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d >= sizes.rank) continue;
    const Index size = static_cast<Index>(sizes.v[d]);
    Index quotient;
    if constexpr (sizeof(Index) == 4) {
      quotient = static_cast<Index>(sizes.div[d].divide(static_cast<uint32_t>(rest)));
    } else {
      quotient = rest / size;
    }
    const Index c = rest - quotient * size;
    rest = quotient;
    out_offset += c * static_cast<Index>(out.strides[d]);
    ((offsets[I] += c * static_cast<Index>(in.strides[d])), ...);
  }
  return out_offset;
}

template <class Index, class Out, class F, class... In, size_t... I>
__device__ __forceinline__ void strided_element(Index i, const Sizes& sizes, const Input<Out>& out,
                                                F& f, std::index_sequence<I...>,
                                                const Input<In>&... in) {
  Index offsets[sizeof...(In) + 1] = {};
  const Index out_offset =
      split_index<Index>(i, sizes, out, offsets, std::index_sequence<I...>{}, in...);
  *reinterpret_cast<Out*>(const_cast<char*>(out.data) + out_offset) =
      f(load_at<Index>(in, offsets[I])...);
}

// The kVec elements of a row at `offset`, where `sizes` counts the innermost
// dim in packs of kVec and each operand's stride there is a pack's bytes; a
// broadcast operand's one element of the row serves the whole pack (a flag,
// not a test of the stride: indexing the strides with a dim known only at run
// time would copy the kernel's arguments to local memory in every thread).
template <class Index, class T>
__device__ __forceinline__ Pack<T> load_row_pack(const Input<T>& in, Index offset) {
  if (in.data && !in.broadcast) {
    return *reinterpret_cast<const Pack<T>*>(in.data + offset);
  }
  const T v = load_at<Index>(in, offset);
  Pack<T> pack;
#pragma unroll
  for (int j = 0; j < kVec; ++j) pack.v[j] = v;
  return pack;
}

template <class Index, class Out, class F, class... In, size_t... I>
__device__ __forceinline__ void strided_pack(Index p, const Sizes& sizes, const Input<Out>& out,
                                             F& f, std::index_sequence<I...>,
                                             const Input<In>&... in) {
  Index offsets[sizeof...(In) + 1] = {};
  const Index out_offset =
      split_index<Index>(p, sizes, out, offsets, std::index_sequence<I...>{}, in...);
  auto compute = [&](const Pack<In>&... x) {
    Pack<Out> r;
#pragma unroll
    for (int j = 0; j < kVec; ++j) r.v[j] = f(x.v[j]...);
    return r;
  };
  *reinterpret_cast<Pack<Out>*>(const_cast<char*>(out.data) + out_offset) =
      compute(load_row_pack<Index>(in, offsets[I])...);
}

template <class Index, class Out, class F, class... In>
__global__ void strided_pack_kernel(int64_t packs, Sizes sizes, Input<Out> out, F f,
                                    Input<In>... in) {
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index p = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
       p < static_cast<Index>(packs); p += step) {
    strided_pack<Index, Out>(p, sizes, out, f, std::index_sequence_for<In...>{}, in...);
  }
}

template <class Index, class Out, class F, class... In>
__global__ void strided_kernel(int64_t n, Sizes sizes, Input<Out> out, F f, Input<In>... in) {
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < static_cast<Index>(n); i += step) {
    strided_element<Index, Out>(i, sizes, out, f, std::index_sequence_for<In...>{}, in...);
  }
}

inline int grid_for(int64_t n, int per_thread) {
  const int64_t threads = (n + per_thread - 1) / per_thread;
  const int64_t blocks = (threads + kBlock - 1) / kBlock;
  constexpr int64_t kMaxBlocks = int64_t{1} << 20;
  return static_cast<int>(blocks < 1 ? 1 : blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Operand k of the layout as a kernel argument. A 0-dim CPU input is read on the
// host; any other input must be on out's device.
template <class T>
Input<T> make_input(const char* op, const Tensor& out, const Tensor* t,
                    const cpu::ElementwiseLayout& layout, int k) {
  Input<T> in{};
  if (t && t->device().is_cpu() && t->dim() == 0 && !out.device().is_cpu()) {
    in.value = *static_cast<const T*>(t->impl()->data_ptr());
    return in;
  }
  if (t) check_same_device(op, out.device(), t->device());
  in.data = layout.data[k];
  const size_t rank = layout.shape.size();
  in.broadcast = rank == 0 || layout.strides[k][0] == 0;
  for (size_t d = 0; d < rank; ++d) in.strides[d] = layout.strides[k][d];
  return in;
}

template <class T>
bool dense_operand(const Input<T>& in, int rank) {
  return !in.data || rank == 0 || in.strides[0] == 0 ||
         in.strides[0] == static_cast<int64_t>(sizeof(T));
}
template <class T>
bool pack_aligned(const Input<T>& in) {
  return !in.data || in.broadcast || reinterpret_cast<uintptr_t>(in.data) % (sizeof(T) * kVec) == 0;
}

// Whether operand `in` reads the layout's innermost dim (`inner`) in aligned
// packs: contiguous there from an aligned start with every row aligned, or one
// element for the whole row (stride 0 there).
template <class T>
bool row_packs(const Input<T>& in, int inner) {
  if (!in.data) return true;
  constexpr int64_t kPackBytes = sizeof(T) * kVec;
  if (in.strides[inner] == 0) return true;
  if (in.strides[inner] != static_cast<int64_t>(sizeof(T))) return false;
  if (reinterpret_cast<uintptr_t>(in.data) % kPackBytes != 0) return false;
  for (int d = 0; d < inner; ++d) {
    if (in.strides[d] % kPackBytes != 0) return false;
  }
  return true;
}

// The layout with its innermost dim counted in packs of kVec (row_packs);
// `broadcast` now says whether one element serves each row.
template <class T>
void to_packs(Input<T>& in, int inner) {
  in.broadcast = in.strides[inner] == 0;
  in.strides[inner] *= kVec;
}

template <class Out, class... In, class F, size_t... I>
void launch_elementwise_impl(const char* op, const Tensor& out,
                             const std::array<const Tensor*, sizeof...(In)>& inputs, F f,
                             std::index_sequence<I...>) {
  cpu::ElementwiseLayout layout = cpu::make_elementwise_layout(out, {inputs[I]...});
  if (layout.numel == 0) return;
  const int rank = static_cast<int>(layout.shape.size());
  STRATA_CHECK(rank <= kMaxDims, op, "tensors of more than ", kMaxDims,
               " non-mergeable dims are not supported on CUDA (got ", rank, ")");
  DeviceGuard guard(out.device());
  const cudaStream_t stream = stream_for(out.device());
  const Input<Out> out_arg = make_input<Out>(op, out, nullptr, layout, 0);
  const std::tuple<Input<In>...> args{make_input<In>(op, out, inputs[I], layout, I + 1)...};

  const bool dense =
      rank <= 1 && dense_operand(out_arg, rank) && (dense_operand(std::get<I>(args), rank) && ...);
  if (dense) {
    Out* out_data = reinterpret_cast<Out*>(layout.data[0]);
    const bool vectorized =
        layout.numel >= kVec && pack_aligned(out_arg) && (pack_aligned(std::get<I>(args)) && ...);
    if (vectorized) {
      contiguous_kernel<true, Out><<<grid_for(layout.numel, kVec), kBlock, 0, stream>>>(
          layout.numel, out_data, f, std::get<I>(args)...);
    } else {
      contiguous_kernel<false, Out><<<grid_for(layout.numel, 1), kBlock, 0, stream>>>(
          layout.numel, out_data, f, std::get<I>(args)...);
    }
    check_launch(op);
    return;
  }

  Sizes sizes{rank, {}};
  int64_t reach = 0;  // the largest byte offset any operand reaches
  for (int d = 0; d < rank; ++d) {
    sizes.v[d] = layout.shape[d];
    if (layout.shape[d] < (int64_t{1} << 31)) sizes.div[d] = FastDivider::of(layout.shape[d]);
    for (int k = 0; k <= static_cast<int>(sizeof...(In)); ++k) {
      const int64_t s = layout.strides[k][d];
      reach += (layout.shape[d] - 1) * (s < 0 ? -s : s);
    }
  }
  const bool small = layout.numel < (int64_t{1} << 31) && reach < (int64_t{1} << 31);
  const int inner = rank - 1;
  const bool packed = layout.shape[inner] % kVec == 0 &&
                      out_arg.strides[inner] == static_cast<int64_t>(sizeof(Out)) &&
                      row_packs(out_arg, inner) && (row_packs(std::get<I>(args), inner) && ...);
  if (packed) {
    Sizes pack_sizes = sizes;
    pack_sizes.v[inner] = layout.shape[inner] / kVec;
    pack_sizes.div[inner] = FastDivider::of(pack_sizes.v[inner]);
    Input<Out> pack_out = out_arg;
    to_packs(pack_out, inner);
    std::tuple<Input<In>...> pack_args = args;
    (to_packs(std::get<I>(pack_args), inner), ...);
    const int64_t packs = layout.numel / kVec;
    if (small) {
      strided_pack_kernel<int32_t, Out><<<grid_for(packs, 1), kBlock, 0, stream>>>(
          packs, pack_sizes, pack_out, f, std::get<I>(pack_args)...);
    } else {
      strided_pack_kernel<int64_t, Out><<<grid_for(packs, 1), kBlock, 0, stream>>>(
          packs, pack_sizes, pack_out, f, std::get<I>(pack_args)...);
    }
    check_launch(op);
    return;
  }
  if (small) {
    strided_kernel<int32_t, Out><<<grid_for(layout.numel, 1), kBlock, 0, stream>>>(
        layout.numel, sizes, out_arg, f, std::get<I>(args)...);
  } else {
    strided_kernel<int64_t, Out><<<grid_for(layout.numel, 1), kBlock, 0, stream>>>(
        layout.numel, sizes, out_arg, f, std::get<I>(args)...);
  }
  check_launch(op);
}

// out = f(in...) elementwise; out holds Out, input k holds In_k (the caller
// dispatched on the dtypes, which the tensors must have).
template <class Out, class... In, class F>
void launch_elementwise(const char* op, const Tensor& out,
                        const std::array<const Tensor*, sizeof...(In)>& inputs, F f) {
  launch_elementwise_impl<Out, In...>(op, out, inputs, f, std::index_sequence_for<In...>{});
}

}  // namespace strata::gpu
