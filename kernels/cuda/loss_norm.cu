// nll_loss and layer_norm on CUDA (kernels/cuda/nn.h).
//  - nll_loss: one block sums the per-row losses and target weights in double
//    (rows are samples of a batch: few enough for one block), flags a bad target,
//    and writes the loss; without reduction each thread writes its rows' losses.
//  - layer_norm: one block per row; mean, then the biased variance of the
//    centred values (two passes, in double), then the normalized row.
#include <cstdint>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

constexpr int kThreads = 256;

// The sum of every thread's `value` over the block, returned to every thread.
__device__ double block_sum(double value) {
  __shared__ double partial[kThreads / 32];
  __shared__ double total;
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0;
    for (int w = 0; w < kThreads / 32; ++w) sum += partial[w];
    total = sum;
  }
  __syncthreads();
  const double result = total;
  __syncthreads();  // partial and total may be reused by the next call
  return result;
}

// bad[0] = 1 and bad[1] = the target when a target is out of range.
template <class T>
__global__ void nll_loss_rows(T* out, const T* input, const int64_t* target, const T* weight,
                              int64_t rows, int64_t classes, int64_t reduction,
                              int64_t ignore_index, long long* bad) {
  double total = 0, weight_total = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    const int64_t label = target[i];
    double loss = 0, label_weight = 0;
    if (label != ignore_index) {
      if (label < 0 || label >= classes) {
        bad[0] = 1;
        bad[1] = label;
      } else {
        label_weight = weight ? static_cast<double>(weight[label]) : 1.0;
        loss = -label_weight * static_cast<double>(input[i * classes + label]);
      }
    }
    if (reduction == 0) out[i] = static_cast<T>(loss);
    total += loss;
    weight_total += label_weight;
  }
  if (reduction == 0) return;
  total = block_sum(total);
  weight_total = block_sum(weight_total);
  // A mean over no counted target is 0 / 0: NaN, as on the CPU.
  if (threadIdx.x == 0) out[0] = static_cast<T>(reduction == 1 ? total / weight_total : total);
}

template <class T>
__global__ void layer_norm_rows(T* out, const T* input, const T* weight, const T* bias,
                                int64_t features, double eps) {
  const T* x = input + blockIdx.x * features;
  T* y = out + blockIdx.x * features;
  double sum = 0;
  for (int64_t j = threadIdx.x; j < features; j += blockDim.x) sum += static_cast<double>(x[j]);
  const double mean = block_sum(sum) / static_cast<double>(features);
  double squares = 0;
  for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
    const double centred = static_cast<double>(x[j]) - mean;
    squares += centred * centred;
  }
  const double variance = block_sum(squares) / static_cast<double>(features);
  const double scale = 1.0 / sqrt(variance + eps);
  for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
    double v = (static_cast<double>(x[j]) - mean) * scale;
    if (weight) v *= static_cast<double>(weight[j]);
    if (bias) v += static_cast<double>(bias[j]);
    y[j] = static_cast<T>(v);
  }
}

template <class T>
const T* optional_data(const Tensor* t) {
  return t ? data_of<T>(*t) : nullptr;
}

}  // namespace

void nll_loss_kernel(const Tensor& out, const Tensor& input, const Tensor& target,
                     const Tensor* weight, int64_t reduction, int64_t ignore_index) {
  constexpr const char* op = "strata::nll_loss";
  check_same_device(op, out.device(), input.device());
  check_same_device(op, out.device(), target.device());
  if (weight) check_same_device(op, out.device(), weight->device());
  const int64_t classes = input.dim() == 0 ? 1 : input.sizes().back();
  const int64_t rows = target.numel();
  DeviceGuard guard(out.device());
  const cudaStream_t stream = stream_for(out.device());
  const Tensor bad = make_empty_tensor({2}, kInt64, out.device(), op);
  auto* bad_data = data_of<long long>(bad);
  STRATA_CUDA_CHECK(cudaMemsetAsync(bad_data, 0, 2 * sizeof(long long), stream), op);
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    nll_loss_rows<T><<<1, kThreads, 0, stream>>>(data_of<T>(out), data_of<T>(input),
                                                 data_of<int64_t>(target), optional_data<T>(weight),
                                                 rows, classes, reduction, ignore_index, bad_data);
  });
  check_launch(op);
  long long host[2];
  STRATA_CUDA_CHECK(cudaMemcpyAsync(host, bad_data, sizeof(host), cudaMemcpyDeviceToHost, stream),
                    op);
  STRATA_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  STRATA_CHECK(host[0] == 0, op, "target ", host[1], " is out of range for ", classes,
               " classes (expected a class in [0, ", classes - 1, "] or ignore_index ",
               ignore_index, ")");
}

void layer_norm_kernel(const Tensor& out, const Tensor& input, const Tensor* weight,
                       const Tensor* bias, int64_t rows, double eps) {
  constexpr const char* op = "strata::layer_norm";
  check_same_device(op, out.device(), input.device());
  if (weight) check_same_device(op, out.device(), weight->device());
  if (bias) check_same_device(op, out.device(), bias->device());
  if (out.numel() == 0 || rows == 0) return;
  STRATA_CHECK(rows < (int64_t{1} << 31), op, "more than 2^31 - 1 rows are not supported on CUDA");
  DeviceGuard guard(out.device());
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    layer_norm_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, stream_for(out.device())>>>(
        data_of<T>(out), data_of<T>(input), optional_data<T>(weight), optional_data<T>(bias),
        out.numel() / rows, eps);
  });
  check_launch(op);
}

}  // namespace strata::gpu
