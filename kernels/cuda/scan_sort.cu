// cumsum and sort on CUDA (kernels/cuda/scan_sort.h). A lane is `size` elements
// `inner` apart; lane l starts at (l / inner) * size * inner + l % inner, so the
// lanes handled by one warp are adjacent in memory when inner > 1. A long
// contiguous lane (inner 1) is scanned by a whole block, tile by tile with a
// running carry, rather than by one thread.
//
// Note [CUDA sort]
// Short lanes sort by rank: each element counts the lane's elements that go
// before it (n^2 comparisons, no scratch). Long lanes go through CUB's stable
// segmented radix sort on canonical keys: every NaN the same positive NaN (which
// radix order puts after +inf, so last ascending and first descending) and -0
// made +0 (equal to it, as comparisons have it), carrying each element's position;
// the values are then read back from the input at the sorted positions.
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/scan_sort.h"
#include "tensor/shape_inference.h"
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

constexpr int kScanThreads = 256;
constexpr int64_t kBlockScannedLane = 2048;

// Block b scans the contiguous lane b: each tile of kScanThreads elements is
// scanned together and offset by the sum of the tiles before it.
template <class T>
__global__ void cumsum_contiguous_lanes(T* out, const T* in, int64_t size) {
  using Scan = cub::BlockScan<T, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * size;
  T carry = 0;
  for (int64_t tile = 0; tile < size; tile += kScanThreads) {
    const int64_t k = tile + threadIdx.x;
    T partial;
    T tile_total;
    Scan(temp).InclusiveSum(k < size ? in[base + k] : T(0), partial, tile_total);
    if (k < size) out[base + k] = static_cast<T>(carry + partial);
    carry = static_cast<T>(carry + tile_total);
    __syncthreads();  // temp is reused by the next tile's scan
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

constexpr int64_t kRankedLane = 1024;

// Radix keys: Bool as a byte.
template <class T>
using KeyOf = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <class T>
__device__ KeyOf<T> canonical_key(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x != x ? __int_as_float(0x7fc00000) : x == 0 ? 0.0f : x;
  } else if constexpr (std::is_same_v<T, double>) {
    return x != x ? __longlong_as_double(0x7ff8000000000000LL) : x == 0 ? 0.0 : x;
  } else {
    return static_cast<KeyOf<T>>(x);
  }
}

// Lane-major keys and positions, and the lanes' offsets into them.
template <class T>
__global__ void gather_keys(KeyOf<T>* keys, int64_t* positions, const T* in, cpu::Lanes l,
                            int64_t n) {
  STRATA_GRID_LOOP(e, n) {
    const int64_t k = e % l.size;
    keys[e] = canonical_key(in[lane_start(e / l.size, l) + k * l.inner]);
    positions[e] = k;
  }
}

__global__ void lane_offsets(int64_t* offsets, int64_t size, int64_t count) {
  STRATA_GRID_LOOP(s, count) { offsets[s] = s * size; }
}

template <class T>
__global__ void scatter_sorted(T* values, int64_t* indices, const T* in, const int64_t* order,
                               cpu::Lanes l, int64_t n) {
  STRATA_GRID_LOOP(e, n) {
    const int64_t start = lane_start(e / l.size, l);
    const int64_t at = start + (e % l.size) * l.inner;
    values[at] = in[start + order[e] * l.inner];
    indices[at] = order[e];
  }
}

// Device scratch of `count` T (kept alive by the returned tensor).
template <class T>
Tensor scratch(int64_t count, Device device, const char* op) {
  const int64_t words = (count * static_cast<int64_t>(sizeof(T)) + 7) / 8;
  return make_empty_tensor({words < 1 ? 1 : words}, kFloat64, device, op);
}

// Note [CUDA sort]: the long lanes' radix sort.
template <class T>
void radix_sort_lanes(const Tensor& values, const Tensor& indices, const Tensor& input,
                      cpu::Lanes lanes, bool descending, const char* op) {
  using K = KeyOf<T>;
  const Device device = input.device();
  const int64_t n = input.numel();
  const int64_t segments = lanes.outer * lanes.inner;
  DeviceGuard guard(device);
  const cudaStream_t stream = stream_for(device);
  const Tensor keys = scratch<K>(2 * n, device, op);
  const Tensor positions = scratch<int64_t>(2 * n, device, op);
  const Tensor offsets = scratch<int64_t>(segments + 1, device, op);
  K* keys_in = data_of<K>(keys);
  int64_t* positions_in = data_of<int64_t>(positions);
  int64_t* begin = data_of<int64_t>(offsets);
  gather_keys<T><<<grid_for(n, 1), kBlock, 0, stream>>>(keys_in, positions_in, data_of<T>(input),
                                                         lanes, n);
  lane_offsets<<<grid_for(segments + 1, 1), kBlock, 0, stream>>>(begin, lanes.size, segments + 1);
  check_launch(op);
  size_t temp_bytes = 0;
  auto sort = [&](void* temp) {
    return descending ? cub::DeviceSegmentedSort::StableSortPairsDescending(
                            temp, temp_bytes, keys_in, keys_in + n, positions_in, positions_in + n,
                            n, segments, begin, begin + 1, stream)
                      : cub::DeviceSegmentedSort::StableSortPairs(
                            temp, temp_bytes, keys_in, keys_in + n, positions_in, positions_in + n,
                            n, segments, begin, begin + 1, stream);
  };
  STRATA_CUDA_CHECK(sort(nullptr), op);
  const Tensor temp = scratch<char>(static_cast<int64_t>(temp_bytes), device, op);
  STRATA_CUDA_CHECK(sort(temp.impl()->data_ptr()), op);
  scatter_sorted<T><<<grid_for(n, 1), kBlock, 0, stream>>>(
      data_of<T>(values), data_of<int64_t>(indices), data_of<T>(input), positions_in + n, lanes, n);
  check_launch(op);
}

}  // namespace

void cumsum_kernel(const Tensor& out, const Tensor& input, cpu::Lanes lanes) {
  constexpr const char* op = "strata::cumsum";
  check_same_device(op, out.device(), input.device());
  const int64_t count = out.numel() == 0 ? 0 : lanes.outer * lanes.inner;
  if (count > 0 && lanes.inner == 1 && lanes.size >= kBlockScannedLane &&
      lanes.outer < (int64_t{1} << 31) && out.dtype() != kBool) {
    DeviceGuard guard(out.device());
    const cudaStream_t stream = stream_for(out.device());
    dispatch_numeric(out.dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      cumsum_contiguous_lanes<T><<<static_cast<unsigned>(lanes.outer), kScanThreads, 0, stream>>>(
          data_of<T>(out), data_of<T>(input), lanes.size);
    });
    return check_launch(op);
  }
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
  if (n > 0 && lanes.size > kRankedLane) {
    return dispatch_all(input.dtype(), op, [&](auto tag) {
      radix_sort_lanes<decltype(tag)>(values, indices, input, lanes, descending, op);
    });
  }
  launch_elements<bool, int64_t, float, double>(
      op, input, input.dtype(), n, [&](auto tag, int grid, cudaStream_t stream) {
        using T = decltype(tag);
        sort_by_rank<T><<<grid, kBlock, 0, stream>>>(data_of<T>(values), data_of<int64_t>(indices),
                                                     data_of<T>(input), lanes, n, descending);
      });
}

}  // namespace strata::gpu
