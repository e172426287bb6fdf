// cumsum and sort on CUDA (kernels/cuda/scan_sort.h). A lane is `size` elements
// `inner` apart; lane l starts at (l / inner) * size * inner + l % inner, so the
// lanes handled by one warp are adjacent in memory when inner > 1.
#include <cstdint>

#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/scan_sort.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

__device__ inline int64_t lane_start(int64_t lane, cpu::Lanes l) {
  return (lane / l.inner) * l.size * l.inner + lane % l.inner;
}

template <class T>
__global__ void cumsum_lanes(T* out, const T* in, cpu::Lanes l, int64_t lanes) {
  STRATA_GRID_LOOP(lane, lanes) {
    const int64_t start = lane_start(lane, l);
    T total = 0;
    for (int64_t k = 0; k < l.size; ++k) {
      const int64_t i = start + k * l.inner;
      total = k == 0 ? in[i] : static_cast<T>(total + in[i]);
      out[i] = total;
    }
  }
}

// Whether a goes before b ascending: NaN counts as larger than every number.
template <class T>
__device__ bool ascending_before(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a < b || (a == a && b != b);
  } else {
    return a < b;
  }
}

// Element k of a lane goes to the place counted by the lane's elements before it:
// those that sort before it, and the equal ones at a lower position (stability).
template <class T>
__global__ void sort_by_rank(T* values, int64_t* indices, const T* in, cpu::Lanes l, int64_t n,
                             bool descending) {
  STRATA_GRID_LOOP(e, n) {
    const int64_t lane = e / l.size;
    const int64_t k = e % l.size;
    const int64_t start = lane_start(lane, l);
    const T x = in[start + k * l.inner];
    int64_t rank = 0;
    for (int64_t j = 0; j < l.size; ++j) {
      const T y = in[start + j * l.inner];
      const bool y_first = descending ? ascending_before(x, y) : ascending_before(y, x);
      const bool x_first = descending ? ascending_before(y, x) : ascending_before(x, y);
      rank += y_first || (!x_first && j < k);
    }
    values[start + rank * l.inner] = x;
    indices[start + rank * l.inner] = k;
  }
}

}  // namespace

void cumsum_kernel(const Tensor& out, const Tensor& input, cpu::Lanes lanes) {
  constexpr const char* op = "strata::cumsum";
  check_same_device(op, out.device(), input.device());
  const int64_t count = out.numel() == 0 ? 0 : lanes.outer * lanes.inner;
  launch_elements<bool, int64_t, float, double>(
      op, out, out.dtype(), count, [&](auto tag, int grid, cudaStream_t stream) {
        using T = decltype(tag);
        cumsum_lanes<T><<<grid, kBlock, 0, stream>>>(data_of<T>(out), data_of<T>(input), lanes,
                                                     count);
      });
}

void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& input,
                 cpu::Lanes lanes, bool descending) {
  constexpr const char* op = "strata::sort";
  check_same_device(op, values.device(), input.device());
  check_same_device(op, indices.device(), input.device());
  const int64_t n = input.numel();
  launch_elements<bool, int64_t, float, double>(
      op, input, input.dtype(), n, [&](auto tag, int grid, cudaStream_t stream) {
        using T = decltype(tag);
        sort_by_rank<T><<<grid, kBlock, 0, stream>>>(data_of<T>(values), data_of<int64_t>(indices),
                                                     data_of<T>(input), lanes, n, descending);
      });
}

}  // namespace strata::gpu
