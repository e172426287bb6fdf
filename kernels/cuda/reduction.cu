// Reductions on CUDA (kernels/cuda/reduction.h): sums, products, extrema and
// extrema with their index, each a reducer run on the shared tree (Note [CUDA
// reduction tree] in kernels/cuda/reduction.cuh).
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/reduction.cuh"
#include "kernels/cuda/reduction.h"
#include "kernels/cuda/runtime.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

template <class T, class A, class Out>
struct ProdReducer : ScalarShuffle<A> {
  using In = T;
  using Acc = A;
  Out* out;

  __device__ double center(int64_t) const { return 0; }
  __device__ Acc identity() const { return Acc(1); }
  __device__ Acc combine(Acc a, Acc b) const { return a * b; }
  __device__ Acc step(Acc a, T x, int64_t, double) const { return a * static_cast<Acc>(x); }
  __device__ void finish(int64_t o, Acc a, int64_t) const { out[o] = static_cast<Out>(a); }
};

// A value and its position in the group; index -1: nothing seen yet. No member
// initialisers: it lives in shared memory.
template <class V>
struct Indexed {
  V value;
  int64_t index;
};

// Max (or min) and the position of its first occurrence; the first NaN wins over
// every number, as on the CPU. Threads see positions interleaved, so equal values
// (and two NaNs) are decided by position, not by arrival.
template <class T, bool kMax>
struct ArgExtremumReducer {
  using In = T;
  using V = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
  using Acc = Indexed<V>;
  T* values;  // null when only the indices are wanted
  int64_t* indices;

  static __device__ Acc shuffle_down(Acc a, int offset) {
    return {shuffle_value(a.value, offset), shuffle_value(a.index, offset)};
  }
  __device__ double center(int64_t) const { return 0; }
  __device__ Acc identity() const { return {V(0), -1}; }
  // Whether b takes a's place.
  static __device__ bool beats(const Acc& b, const Acc& a) {
    if (b.index < 0) return false;
    if (a.index < 0) return true;
    if constexpr (std::is_floating_point_v<T>) {
      const bool a_nan = a.value != a.value;
      const bool b_nan = b.value != b.value;
      if (a_nan || b_nan) return a_nan && b_nan ? b.index < a.index : b_nan;
    }
    if (b.value == a.value) return b.index < a.index;
    return kMax ? b.value > a.value : b.value < a.value;
  }
  __device__ Acc combine(Acc a, Acc b) const { return beats(b, a) ? b : a; }
  __device__ Acc step(Acc a, T x, int64_t position, double) const {
    return combine(a, Acc{static_cast<V>(x), position});
  }
  __device__ void finish(int64_t o, Acc a, int64_t) const {
    if (values) values[o] = static_cast<T>(a.value);
    indices[o] = a.index;
  }
};

template <class R>
void reduce_into(const char* op, const Tensor& out, const Tensor& self, DimMask reduced,
                 const R& r) {
  check_same_device(op, out.device(), self.device());
  run_reduction(op, r, self, reduced, out.numel());
}

// Sums: Bool and Int64 into Int64, Float32 through a double accumulator.
template <SumKind kKind>
void sum_like(const char* op, const Tensor& out, const Tensor& self, DimMask reduced) {
  dispatch_all(self.dtype(), op, [&](auto tag) {
    using In = decltype(tag);
    if constexpr (std::is_floating_point_v<In>) {
      reduce_into(op, out, self, reduced, SumReducer<In, double, In, kKind>{{}, data_of<In>(out)});
    } else {
      reduce_into(op, out, self, reduced,
                  SumReducer<In, int64_t, int64_t, kKind>{{}, data_of<int64_t>(out)});
    }
  });
}

template <bool kMax>
void extremum(const char* op, const Tensor& out, const Tensor& self, DimMask reduced) {
  dispatch_all(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    reduce_into(op, out, self, reduced, ExtremumReducer<T, T, kMax>{{}, data_of<T>(out)});
  });
}

template <bool kMax>
void extremum_with_index(const char* op, const Tensor& values, const Tensor& indices,
                         const Tensor& self, DimMask reduced) {
  check_same_device(op, indices.device(), self.device());
  if (values.defined()) check_same_device(op, values.device(), self.device());
  dispatch_all(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const ArgExtremumReducer<T, kMax> r{values.defined() ? data_of<T>(values) : nullptr,
                                        data_of<int64_t>(indices)};
    run_reduction(op, r, self, reduced, indices.numel());
  });
}

}  // namespace

void sum_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  sum_like<SumKind::Sum>("strata::sum", out, self, reduced);
}
void mean_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  sum_like<SumKind::Mean>("strata::mean", out, self, reduced);
}
void prod_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  constexpr const char* op = "strata::prod";
  dispatch_all(self.dtype(), op, [&](auto tag) {
    using In = decltype(tag);
    if constexpr (std::is_floating_point_v<In>) {
      reduce_into(op, out, self, reduced, ProdReducer<In, double, In>{{}, data_of<In>(out)});
    } else {
      reduce_into(op, out, self, reduced,
                  ProdReducer<In, int64_t, int64_t>{{}, data_of<int64_t>(out)});
    }
  });
}
void amax_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  extremum<true>("strata::amax", out, self, reduced);
}
void amin_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  extremum<false>("strata::amin", out, self, reduced);
}
void max_with_index_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                           DimMask reduced) {
  extremum_with_index<true>("strata::max", values, indices, self, reduced);
}
void min_with_index_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                           DimMask reduced) {
  extremum_with_index<false>("strata::min", values, indices, self, reduced);
}

}  // namespace strata::gpu
