// Gathers and scatters on CUDA (kernels/cuda/indexing.h). One thread per element
// of the index's (or the output's) shape turns its linear position into
// coordinates (kernels/cuda/geometry.cuh), reads the index there and addresses
// the data tensor with the indexed coordinate replaced; any layout.
#include <cstdint>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/scalar.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

// found[0] becomes 1 and found[1] the value of the first bad index a thread sees.
__global__ void find_out_of_range(const int64_t* index, Geometry g, int64_t n, int64_t size,
                                  unsigned long long* found) {
  int64_t coord[kMaxDims];
  STRATA_GRID_LOOP(i, n) {
    coordinates(g, i, coord);
    const int64_t v = index[offset_in(g, coord)];
    if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(size) &&
        atomicCAS(found, 0ull, 1ull) == 0) {
      found[1] = static_cast<unsigned long long>(v);
    }
  }
}

template <class T>
__global__ void gather_elements(T* out, Geometry out_g, const T* self, Geometry self_g,
                                const int64_t* index, Geometry index_g, int dim, int64_t n) {
  int64_t coord[kMaxDims];
  STRATA_GRID_LOOP(i, n) {
    coordinates(index_g, i, coord);
    const int64_t at = index[offset_in(index_g, coord)];
    out[offset_in(out_g, coord)] = self[offset_in(self_g, coord, dim, at)];
  }
}

template <class T>
__device__ inline void atomic_accumulate(T* target, T value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (value) *target = true;  // every writer writes true: no race on the value
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(target),
              static_cast<unsigned long long>(value));
  } else {
    atomicAdd(target, value);
  }
}

// Bool sums ignore alpha (an or).
template <class T>
__global__ void scatter_add_elements(T* self, Geometry self_g, const T* src, Geometry src_g,
                                     const int64_t* index, Geometry index_g, int dim, T alpha,
                                     int64_t n) {
  int64_t coord[kMaxDims];
  STRATA_GRID_LOOP(i, n) {
    coordinates(index_g, i, coord);
    const int64_t at = index[offset_in(index_g, coord)];
    T value = src[offset_in(src_g, coord)];
    if constexpr (!std::is_same_v<T, bool>) value = value * alpha;
    atomic_accumulate(self + offset_in(self_g, coord, dim, at), value);
  }
}

// Element i of the positions' blocks, laid one after another: block i / width at
// offsets[i / width], element i % width of it.
template <class T>
__global__ void take_block_elements(T* out, const T* src, const int64_t* offsets, int64_t width,
                                    int64_t n) {
  STRATA_GRID_LOOP(i, n) { out[i] = src[offsets[i / width] + i % width]; }
}

template <class T>
__global__ void put_block_elements(T* target, const T* values, const int64_t* offsets,
                                   int64_t width, bool accumulate, int64_t n) {
  STRATA_GRID_LOOP(i, n) {
    const int64_t offset = offsets[i / width];
    if (offset < 0) continue;  // a block written again later
    T* at = target + offset + i % width;
    if (accumulate) {
      atomic_accumulate(at, values[i]);
    } else {
      *at = values[i];
    }
  }
}

template <class T>
__global__ void embedding_rows(T* out, const T* weight, const int64_t* indices, int64_t width,
                               int64_t n) {
  STRATA_GRID_LOOP(i, n) { out[i] = weight[indices[i / width] * width + i % width]; }
}

template <class T>
struct MaskedFillF {
  T value;
  __device__ T operator()(T x, bool mask) const { return mask ? value : x; }
};

// The 1-D index of index_select and index_add read over `shape` (the output's or
// the source's): it varies along `dim` only, so both ops are a gather or a
// scatter_add with this index.
Geometry index_along(Geometry shape, const Tensor& index, int64_t dim) {
  for (int d = 0; d < shape.rank; ++d) shape.strides[d] = 0;
  shape.strides[dim] = index.dim() == 0 ? 0 : index.strides()[0];
  return shape;
}

void check_devices(const char* op, const Tensor& out, std::initializer_list<const Tensor*> others) {
  for (const Tensor* t : others) check_same_device(op, out.device(), t->device());
}

// out[coord] = self[coord with coord[dim] = index at coord] over index_g's shape.
void gather(const char* op, const Tensor& out, const Tensor& self, int64_t dim,
            const Tensor& index, const Geometry& index_g) {
  check_devices(op, out, {&self, &index});
  check_index_range(index, self.dim() == 0 ? 1 : self.sizes()[dim], dim, op);
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  dispatch_all(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    gather_elements<T><<<grid_for(out.numel(), 1), kBlock, 0, stream_for(out.device())>>>(
        data_of<T>(out), geometry_of(out, op), data_of<T>(self), geometry_of(self, op),
        data_of<int64_t>(index), index_g, static_cast<int>(dim), out.numel());
  });
  check_launch(op);
}

// self[coord with coord[dim] = index at coord] += alpha * src[coord] over src_g's
// shape (n elements).
void scatter_add(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor& src, const Geometry& index_g, int64_t n, const Scalar& alpha) {
  check_devices(op, self, {&index, &src});
  if (n == 0) return;
  DeviceGuard guard(self.device());
  dispatch_all(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    scatter_add_elements<T><<<grid_for(n, 1), kBlock, 0, stream_for(self.device())>>>(
        data_of<T>(self), geometry_of(self, op), data_of<T>(src), geometry_of(src, op),
        data_of<int64_t>(index), index_g, static_cast<int>(dim), alpha.to<T>(), n);
  });
  check_launch(op);
}

}  // namespace

void check_index_range(const Tensor& index, int64_t size, int64_t dim, const char* op) {
  if (index.numel() == 0) return;
  DeviceGuard guard(index.device());
  const cudaStream_t stream = stream_for(index.device());
  const Tensor found = make_empty_tensor({2}, kInt64, index.device(), op);
  auto* flag = static_cast<unsigned long long*>(found.impl()->data_ptr());
  STRATA_CUDA_CHECK(cudaMemsetAsync(flag, 0, 2 * sizeof(int64_t), stream), op);
  find_out_of_range<<<grid_for(index.numel(), 1), kBlock, 0, stream>>>(
      data_of<int64_t>(index), geometry_of(index, op), index.numel(), size, flag);
  check_launch(op);
  unsigned long long host[2];
  STRATA_CUDA_CHECK(cudaMemcpyAsync(host, flag, sizeof(host), cudaMemcpyDeviceToHost, stream), op);
  STRATA_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  STRATA_CHECK(host[0] == 0, op, "index ", static_cast<int64_t>(host[1]),
               " is out of range for dim ", dim, " of size ", size, " (expected an index in [0, ",
               size, "))");
}

void index_select_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  constexpr const char* op = "strata::index_select";
  gather(op, out, self, dim, index, index_along(geometry_of(out, op), index, dim));
}

void gather_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  constexpr const char* op = "strata::gather";
  gather(op, out, self, dim, index, geometry_of(index, op));
}

void scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  constexpr const char* op = "strata::scatter_add";
  scatter_add(op, self, dim, index, src, geometry_of(index, op), index.numel(), 1);
}

void index_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha) {
  constexpr const char* op = "strata::index_add";
  scatter_add(op, self, dim, index, source, index_along(geometry_of(source, op), index, dim),
              source.numel(), alpha);
}

void take_blocks_kernel(const Tensor& out, const Tensor& src, const Tensor& offsets,
                        int64_t block) {
  constexpr const char* op = "strata::index";
  check_devices(op, out, {&src, &offsets});
  launch_elements<bool, int64_t, float, double>(
      op, out, out.dtype(), out.numel(), [&](auto tag, int grid, cudaStream_t stream) {
        using T = decltype(tag);
        take_block_elements<T><<<grid, kBlock, 0, stream>>>(
            data_of<T>(out), data_of<T>(src), data_of<int64_t>(offsets), block, out.numel());
      });
}

void put_blocks_kernel(const Tensor& target, const Tensor& values, const Tensor& offsets,
                       int64_t block, bool accumulate) {
  constexpr const char* op = "strata::index_put";
  check_devices(op, target, {&values, &offsets});
  const int64_t n = offsets.numel() * block;
  launch_elements<bool, int64_t, float, double>(
      op, target, target.dtype(), n, [&](auto tag, int grid, cudaStream_t stream) {
        using T = decltype(tag);
        put_block_elements<T><<<grid, kBlock, 0, stream>>>(data_of<T>(target), data_of<T>(values),
                                                           data_of<int64_t>(offsets), block,
                                                           accumulate, n);
      });
}

void masked_fill_kernel(const Tensor& out, const Tensor& self, const Tensor& mask,
                        const Scalar& value) {
  constexpr const char* op = "strata::masked_fill";
  dispatch_all(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T, bool>(op, out, {&self, &mask}, MaskedFillF<T>{value.to<T>()});
  });
}

void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  constexpr const char* op = "strata::embedding";
  check_devices(op, out, {&weight, &indices});
  check_index_range(indices, weight.sizes()[0], 0, op);
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  dispatch_all(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    embedding_rows<T><<<grid_for(out.numel(), 1), kBlock, 0, stream_for(out.device())>>>(
        data_of<T>(out), data_of<T>(weight), data_of<int64_t>(indices), weight.sizes()[1],
        out.numel());
  });
  check_launch(op);
}

}  // namespace strata::gpu
