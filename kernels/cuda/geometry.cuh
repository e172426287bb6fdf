#pragma once

// Element geometry of a tensor for kernels that address operands by coordinates
// (gathers, scatters, random ops with broadcast parameters): sizes and element
// strides, a 0-dim tensor seen as one element along dim 0 (the CPU kernels'
// convention). Only kernels/cuda/*.cu include this.

#include <cstdint>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::gpu {

struct Geometry {
  int rank;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
};

inline Geometry geometry_of(const Tensor& t, const char* op) {
  STRATA_CHECK(t.dim() <= kMaxDims, op, "tensors of more than ", kMaxDims,
               " dims are not supported on CUDA (got ", t.dim(), ")");
  Geometry g{1, {1}, {0}};
  if (t.dim() == 0) return g;
  g.rank = static_cast<int>(t.dim());
  for (int d = 0; d < g.rank; ++d) {
    g.sizes[d] = t.sizes()[d];
    g.strides[d] = t.strides()[d];
  }
  return g;
}

// t read over `sizes` (which t broadcasts to): leading and size-1 dims get stride 0.
inline Geometry broadcast_geometry(const Tensor& t, IntArrayRef sizes, const char* op) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  STRATA_CHECK(rank <= kMaxDims, op, "tensors of more than ", kMaxDims,
               " dims are not supported on CUDA (got ", rank, ")");
  Geometry g{1, {1}, {0}};
  if (rank == 0) return g;
  g.rank = static_cast<int>(rank);
  const int64_t lead = rank - t.dim();
  for (int d = 0; d < g.rank; ++d) {
    const int64_t k = d - lead;
    g.sizes[d] = sizes[d];
    g.strides[d] = k < 0 || t.sizes()[k] == 1 ? 0 : t.strides()[k];
  }
  return g;
}

// Coordinates of linear position i (row-major over shape's sizes).
__device__ inline void coordinates(const Geometry& shape, int64_t i, int64_t* coord) {
  for (int d = shape.rank - 1; d >= 0; --d) {
    coord[d] = i % shape.sizes[d];
    i /= shape.sizes[d];
  }
}

// Element offset of coord in t, with coordinate `dim` replaced by `at` (dim < 0: none).
__device__ inline int64_t offset_in(const Geometry& t, const int64_t* coord, int dim = -1,
                                    int64_t at = 0) {
  int64_t off = 0;
  for (int d = 0; d < t.rank; ++d) off += (d == dim ? at : coord[d]) * t.strides[d];
  return off;
}

template <class T>
T* data_of(const Tensor& t) {
  return static_cast<T*>(t.impl()->data_ptr());
}

// The launch of a one-thread-per-element kernel: for n > 0 work items, under
// `on`'s device, body(T{}, grid, stream) launches with T picked among Ts by dtype;
// the launch is then checked.
template <class... Ts, class Body>
void launch_elements(const char* op, const Tensor& on, ScalarType dtype, int64_t n, Body&& body) {
  if (n == 0) return;
  DeviceGuard guard(on.device());
  const cudaStream_t stream = stream_for(on.device());
  const int grid = grid_for(n, 1);
  dispatch_among<Ts...>(dtype, op, [&](auto tag) { body(tag, grid, stream); });
  check_launch(op);
}

}  // namespace strata::gpu

// A grid-stride loop of i over [0, n).
#define STRATA_GRID_LOOP(i, n)                                                           \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
