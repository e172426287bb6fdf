// Random kernels on CUDA (kernels/cuda/random.h): thread i evaluates Philox at
// counter offset + i with the CPU's own functions (tensor/philox.h), so the two
// backends draw the same numbers. Parameters of bernoulli and normal are read
// through their geometry broadcast to the output.
#include <cstdint>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/random.h"
#include "kernels/cuda/runtime.h"
#include "tensor/philox.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

template <class T>
struct UniformF {
  __device__ T operator()(const philox::Words4& r) const { return philox::uniform<T>(r); }
};
template <class T>
struct NormalF {
  __device__ T operator()(const philox::Words4& r) const { return philox::standard_normal<T>(r); }
};
template <class T>
struct RandintF {
  int64_t low;
  uint64_t range;
  __device__ T operator()(const philox::Words4& r) const {
    return static_cast<T>(
        static_cast<int64_t>(static_cast<uint64_t>(low) + philox::below(r, range)));
  }
};
template <class T>
struct DropoutF {
  double p;
  T kept;
  __device__ T operator()(const philox::Words4& r) const {
    return philox::uniform<double>(r) < p ? T(0) : kept;
  }
};

template <class T, class Sample>
__global__ void generate(T* out, int64_t n, uint64_t seed, uint64_t offset, Sample sample) {
  STRATA_GRID_LOOP(i, n) { out[i] = sample(philox::random_words(seed, offset + i)); }
}

template <class T>
__global__ void bernoulli_elements(T* out, Geometry shape, const T* p, Geometry p_g, int64_t n,
                                   uint64_t seed, uint64_t offset) {
  int64_t coord[kMaxDims];
  STRATA_GRID_LOOP(i, n) {
    coordinates(shape, i, coord);
    const T u = philox::uniform<T>(philox::random_words(seed, offset + i));
    out[i] = u < p[offset_in(p_g, coord)] ? T(1) : T(0);
  }
}

template <class T>
__global__ void normal_elements(T* out, Geometry shape, const T* mean, Geometry mean_g,
                                const T* std, Geometry std_g, int64_t n, uint64_t seed,
                                uint64_t offset) {
  int64_t coord[kMaxDims];
  STRATA_GRID_LOOP(i, n) {
    coordinates(shape, i, coord);
    const T eps = philox::standard_normal<T>(philox::random_words(seed, offset + i));
    out[i] = mean[offset_in(mean_g, coord)] + std[offset_in(std_g, coord)] * eps;
  }
}

template <class T>
__global__ void find_outside(const T* t, Geometry g, int64_t n, double low, double high,
                             int* outside) {
  int64_t coord[kMaxDims];
  STRATA_GRID_LOOP(i, n) {
    coordinates(g, i, coord);
    const double v = static_cast<double>(t[offset_in(g, coord)]);
    if (!(v >= low && v <= high)) *outside = 1;
  }
}

template <class T, class Sample>
void launch_generate(const Tensor& out, PhiloxStream stream, Sample sample, const char* op) {
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  generate<T><<<grid_for(out.numel(), 1), kBlock, 0, stream_for(out.device())>>>(
      data_of<T>(out), out.numel(), stream.seed, stream.offset, sample);
  check_launch(op);
}

}  // namespace

void uniform_kernel(const Tensor& out, PhiloxStream stream) {
  dispatch_floating(out.dtype(), "strata::rand", [&](auto tag) {
    using T = decltype(tag);
    launch_generate<T>(out, stream, UniformF<T>{}, "strata::rand");
  });
}

void standard_normal_kernel(const Tensor& out, PhiloxStream stream) {
  dispatch_floating(out.dtype(), "strata::randn", [&](auto tag) {
    using T = decltype(tag);
    launch_generate<T>(out, stream, NormalF<T>{}, "strata::randn");
  });
}

void randint_kernel(const Tensor& out, int64_t low, int64_t high, PhiloxStream stream) {
  // Unsigned arithmetic: high - low may exceed INT64_MAX, and low + k wraps into range.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  dispatch_numeric(out.dtype(), "strata::randint", [&](auto tag) {
    using T = decltype(tag);
    launch_generate<T>(out, stream, RandintF<T>{low, range}, "strata::randint");
  });
}

void dropout_mask_kernel(const Tensor& mask, double p, uint64_t seed, uint64_t first) {
  dispatch_floating(mask.dtype(), "strata::dropout", [&](auto tag) {
    using T = decltype(tag);
    // p == 1 keeps nothing; 1 / (1 - p) would be infinite.
    const T kept = p < 1 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
    launch_generate<T>(mask, {seed, first}, DropoutF<T>{p, kept}, "strata::dropout");
  });
}

void bernoulli_kernel(const Tensor& out, const Tensor& p, PhiloxStream stream) {
  constexpr const char* op = "strata::bernoulli";
  check_same_device(op, out.device(), p.device());
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    bernoulli_elements<T><<<grid_for(out.numel(), 1), kBlock, 0, stream_for(out.device())>>>(
        data_of<T>(out), geometry_of(out, op), data_of<T>(p),
        broadcast_geometry(p, out.sizes(), op), out.numel(), stream.seed, stream.offset);
  });
  check_launch(op);
}

void normal_kernel(const Tensor& out, const Tensor& mean, const Tensor& std, PhiloxStream stream) {
  constexpr const char* op = "strata::normal";
  check_same_device(op, out.device(), mean.device());
  check_same_device(op, out.device(), std.device());
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    normal_elements<T><<<grid_for(out.numel(), 1), kBlock, 0, stream_for(out.device())>>>(
        data_of<T>(out), geometry_of(out, op), data_of<T>(mean),
        broadcast_geometry(mean, out.sizes(), op), data_of<T>(std),
        broadcast_geometry(std, out.sizes(), op), out.numel(), stream.seed, stream.offset);
  });
  check_launch(op);
}

bool all_within(const Tensor& t, double low, double high) {
  constexpr const char* op = "strata::all_within";
  if (t.numel() == 0) return true;
  DeviceGuard guard(t.device());
  const cudaStream_t stream = stream_for(t.device());
  const Tensor flag = make_empty_tensor({1}, kInt64, t.device(), op);
  int* outside = data_of<int>(flag);
  STRATA_CUDA_CHECK(cudaMemsetAsync(outside, 0, sizeof(int), stream), op);
  dispatch_floating(t.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    find_outside<T><<<grid_for(t.numel(), 1), kBlock, 0, stream>>>(
        data_of<T>(t), geometry_of(t, op), t.numel(), low, high, outside);
  });
  check_launch(op);
  int host = 0;
  STRATA_CUDA_CHECK(cudaMemcpyAsync(&host, outside, sizeof(int), cudaMemcpyDeviceToHost, stream),
                    op);
  STRATA_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  return host == 0;
}

}  // namespace strata::gpu
