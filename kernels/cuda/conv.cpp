// conv2d and its two backward ops on CUDA through cuDNN (kernels/cuda/nn.h): NCHW
// tensors, cross-correlation, the fastest algorithm (timed once per shape) that
// runs in plain FMA math and sums directly (TF32, FFT and Winograd would miss the
// CPU's results), its workspace
// from the caching allocator. One cuDNN handle per device, bound to the device's
// stream (Note [One stream per device]). Built without cuDNN, the kernels raise.
#include <array>
#include <limits>
#include <map>
#include <mutex>

#include "kernels/cuda/nn.h"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

#if STRATA_WITH_CUDNN
#include <cudnn.h>
#endif

namespace strata::gpu {

#if STRATA_WITH_CUDNN
namespace {

using cpu::Conv2dGeometry;

void check_cudnn(cudnnStatus_t status, const char* op, const char* what) {
  STRATA_CHECK(status == CUDNN_STATUS_SUCCESS, op, what, " failed: ", cudnnGetErrorString(status));
}
#define STRATA_CUDNN_CHECK(expr, op) check_cudnn((expr), (op), #expr)

cudnnHandle_t handle_for(Device device) {
  constexpr int kMaxDevices = 64;
  static std::array<cudnnHandle_t, kMaxDevices> handles{};
  static std::array<std::once_flag, kMaxDevices> created;
  const cudaStream_t stream = stream_for(device);  // checks the device index
  std::call_once(created[device.index], [&] {
    STRATA_CUDNN_CHECK(cudnnCreate(&handles[device.index]), "cudnn");
    STRATA_CUDNN_CHECK(cudnnSetStream(handles[device.index], stream), "cudnn");
  });
  return handles[device.index];
}

int as_int(int64_t v, const char* op) {
  STRATA_CHECK(v <= std::numeric_limits<int>::max(), op, "size ", v,
               " exceeds cuDNN's 32-bit dimensions");
  return static_cast<int>(v);
}

// The descriptors of one convolution, destroyed with it.
class ConvDescriptors {
 public:
  ConvDescriptors(const Conv2dGeometry& g, ScalarType dtype, const char* op) : op_(op) {
    STRATA_CHECK(dtype == kFloat32 || dtype == kFloat64, op,
                 "expected Float32 or Float64 on CUDA, got ", dtype);
    type_ = dtype == kFloat32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
    STRATA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&input), op);
    STRATA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&output), op);
    STRATA_CUDNN_CHECK(cudnnCreateFilterDescriptor(&weight), op);
    STRATA_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv), op);
    STRATA_CUDNN_CHECK(cudnnSetTensor4dDescriptor(input, CUDNN_TENSOR_NCHW, type_,
                                                  as_int(g.batch, op), as_int(g.in_channels, op),
                                                  as_int(g.in_h, op), as_int(g.in_w, op)),
                       op);
    STRATA_CUDNN_CHECK(cudnnSetTensor4dDescriptor(output, CUDNN_TENSOR_NCHW, type_,
                                                  as_int(g.batch, op), as_int(g.out_channels, op),
                                                  as_int(g.out_h, op), as_int(g.out_w, op)),
                       op);
    STRATA_CUDNN_CHECK(
        cudnnSetFilter4dDescriptor(weight, type_, CUDNN_TENSOR_NCHW, as_int(g.out_channels, op),
                                   as_int(g.in_channels / g.groups, op), as_int(g.kernel_h, op),
                                   as_int(g.kernel_w, op)),
        op);
    STRATA_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
                           conv, as_int(g.pad_h, op), as_int(g.pad_w, op), as_int(g.stride_h, op),
                           as_int(g.stride_w, op), as_int(g.dilation_h, op),
                           as_int(g.dilation_w, op), CUDNN_CROSS_CORRELATION, type_),
                       op);
    STRATA_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, as_int(g.groups, op)), op);
    STRATA_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), op);
  }
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(weight);
    cudnnDestroyTensorDescriptor(output);
    cudnnDestroyTensorDescriptor(input);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;

  // alpha = 1 and beta = 0 in the type cuDNN reads them as for this data type.
  const void* one() const {
    return type_ == CUDNN_DATA_FLOAT ? static_cast<const void*>(&kOneF) : &kOneD;
  }
  const void* zero() const {
    return type_ == CUDNN_DATA_FLOAT ? static_cast<const void*>(&kZeroF) : &kZeroD;
  }

  cudnnTensorDescriptor_t input{}, output{};
  cudnnFilterDescriptor_t weight{};
  cudnnConvolutionDescriptor_t conv{};

 private:
  static constexpr float kOneF = 1, kZeroF = 0;
  static constexpr double kOneD = 1, kZeroD = 0;
  const char* op_;
  cudnnDataType_t type_;
};

// Algorithms that sum the same products as the CPU in FP32/FP64: the FFT and
// Winograd ones transform the operands and miss the CPU's per-sample gradients by
// up to ~1e-1 relative on small entries.
bool direct_sum(cudnnConvolutionFwdAlgo_t a) {
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool direct_sum(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}
bool direct_sum(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

// The first of the heuristics' candidates that runs without tensor-op math and
// sums directly.
template <class Perf>
auto pick_algorithm(const Perf* perf, int count, const char* op) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
        perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && direct_sum(perf[i].algo)) {
      return perf[i].algo;
    }
  }
  STRATA_FAIL(op, "cuDNN offers no FMA-math, direct-sum algorithm for this convolution");
}

constexpr int kCandidates = 16;

// Note [Timing cuDNN's algorithms once per shape]
// The heuristics' first choice can be far from the fastest (a grouped backward
// filter, vmap's per-sample weight gradients, by 10x), so the first convolution
// of each shape times every algorithm (cudnnFind*, as PyTorch's
// cudnn.benchmark does) and the fastest one pick_algorithm accepts is kept for
// that shape, dtype and device.
using ShapeKey = std::array<int64_t, 18>;

ShapeKey shape_key(const Conv2dGeometry& g, ScalarType dtype, Device device) {
  return {g.batch,
          g.in_channels,
          g.out_channels,
          g.groups,
          g.in_h,
          g.in_w,
          g.out_h,
          g.out_w,
          g.kernel_h,
          g.kernel_w,
          g.stride_h,
          g.stride_w,
          g.pad_h,
          g.pad_w,
          g.dilation_h,
          g.dilation_w,
          static_cast<int64_t>(dtype),
          device.index};
}

template <class Perf, class Find>
auto fastest_algorithm(const ShapeKey& key, const char* op, Find find) {
  using Algo = decltype(Perf{}.algo);
  static std::mutex mutex;
  static std::map<ShapeKey, Algo> found;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = found.find(key); it != found.end()) return it->second;
  }
  Perf perf[kCandidates];
  int count = 0;
  find(perf, &count);
  const Algo algo = pick_algorithm(perf, count, op);
  const std::lock_guard<std::mutex> lock(mutex);
  found.emplace(key, algo);
  return algo;
}

// An empty grad_output contributes nothing: the gradient is zero (cuDNN refuses
// descriptors with a zero size).
bool zeroed_when_empty(const Tensor& grad, const Tensor& grad_output) {
  if (grad_output.numel() != 0) return false;
  DeviceGuard guard(grad.device());
  STRATA_CUDA_CHECK(cudaMemsetAsync(grad.impl()->data_ptr(), 0,
                                    static_cast<size_t>(grad.numel()) * element_size(grad.dtype()),
                                    stream_for(grad.device())),
                    "strata::conv2d backward");
  return true;
}

// Device scratch memory of at least `bytes` (kept alive by the returned tensor).
Tensor workspace(size_t bytes, Device device, const char* op) {
  const int64_t words = static_cast<int64_t>((bytes + sizeof(double) - 1) / sizeof(double));
  return make_empty_tensor({words}, kFloat64, device, op);
}

void* data(const Tensor& t) { return t.impl()->data_ptr(); }

}  // namespace

void conv2d_forward_kernel(const Tensor& out, const Tensor& input, const Tensor& weight,
                           const Tensor* bias, const Conv2dGeometry& g) {
  constexpr const char* op = "strata::conv2d";
  check_same_device(op, out.device(), input.device());
  check_same_device(op, out.device(), weight.device());
  if (bias) check_same_device(op, out.device(), bias->device());
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  const cudnnHandle_t handle = handle_for(out.device());
  const ConvDescriptors d(g, out.dtype(), op);
  const cudnnConvolutionFwdAlgo_t algo = fastest_algorithm<cudnnConvolutionFwdAlgoPerf_t>(
      shape_key(g, out.dtype(), out.device()), op, [&](auto* perf, int* count) {
        STRATA_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, d.input, d.weight, d.conv,
                                                                d.output, kCandidates, count, perf),
                           op);
      });
  size_t bytes = 0;
  STRATA_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, d.input, d.weight, d.conv,
                                                             d.output, algo, &bytes),
                     op);
  const Tensor scratch = workspace(bytes, out.device(), op);
  STRATA_CUDNN_CHECK(
      cudnnConvolutionForward(handle, d.one(), d.input, data(input), d.weight, data(weight), d.conv,
                              algo, data(scratch), bytes, d.zero(), d.output, data(out)),
      op);
  if (!bias) return;
  cudnnTensorDescriptor_t bias_desc;
  STRATA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&bias_desc), op);
  const cudnnStatus_t set = cudnnSetTensor4dDescriptor(
      bias_desc, CUDNN_TENSOR_NCHW, out.dtype() == kFloat32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE,
      1, as_int(g.out_channels, op), 1, 1);
  const cudnnStatus_t added =
      set == CUDNN_STATUS_SUCCESS
          ? cudnnAddTensor(handle, d.one(), bias_desc, data(*bias), d.one(), d.output, data(out))
          : set;
  cudnnDestroyTensorDescriptor(bias_desc);
  check_cudnn(added, op, "cudnnAddTensor (bias)");
}

void conv2d_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                  const Tensor& weight, const Conv2dGeometry& g) {
  constexpr const char* op = "strata::conv2d_backward_input";
  check_same_device(op, grad_input.device(), grad_output.device());
  check_same_device(op, grad_input.device(), weight.device());
  if (grad_input.numel() == 0 || zeroed_when_empty(grad_input, grad_output)) return;
  DeviceGuard guard(grad_input.device());
  const cudnnHandle_t handle = handle_for(grad_input.device());
  const ConvDescriptors d(g, grad_input.dtype(), op);
  const cudnnConvolutionBwdDataAlgo_t algo = fastest_algorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
      shape_key(g, grad_input.dtype(), grad_input.device()), op, [&](auto* perf, int* count) {
        STRATA_CUDNN_CHECK(
            cudnnFindConvolutionBackwardDataAlgorithm(handle, d.weight, d.output, d.conv, d.input,
                                                      kCandidates, count, perf),
            op);
      });
  size_t bytes = 0;
  STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d.weight, d.output,
                                                                  d.conv, d.input, algo, &bytes),
                     op);
  const Tensor scratch = workspace(bytes, grad_input.device(), op);
  STRATA_CUDNN_CHECK(cudnnConvolutionBackwardData(handle, d.one(), d.weight, data(weight), d.output,
                                                  data(grad_output), d.conv, algo, data(scratch),
                                                  bytes, d.zero(), d.input, data(grad_input)),
                     op);
}

void conv2d_backward_weight_kernel(const Tensor& grad_weight, const Tensor& grad_output,
                                   const Tensor& input, const Conv2dGeometry& g) {
  constexpr const char* op = "strata::conv2d_backward_weight";
  check_same_device(op, grad_weight.device(), grad_output.device());
  check_same_device(op, grad_weight.device(), input.device());
  if (grad_weight.numel() == 0 || zeroed_when_empty(grad_weight, grad_output)) return;
  DeviceGuard guard(grad_weight.device());
  const cudnnHandle_t handle = handle_for(grad_weight.device());
  const ConvDescriptors d(g, grad_weight.dtype(), op);
  const cudnnConvolutionBwdFilterAlgo_t algo =
      fastest_algorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
          shape_key(g, grad_weight.dtype(), grad_weight.device()), op, [&](auto* perf, int* count) {
            STRATA_CUDNN_CHECK(
                cudnnFindConvolutionBackwardFilterAlgorithm(handle, d.input, d.output, d.conv,
                                                            d.weight, kCandidates, count, perf),
                op);
          });
  size_t bytes = 0;
  STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d.input, d.output,
                                                                    d.conv, d.weight, algo, &bytes),
                     op);
  const Tensor scratch = workspace(bytes, grad_weight.device(), op);
  STRATA_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, d.one(), d.input, data(input), d.output,
                                                    data(grad_output), d.conv, algo, data(scratch),
                                                    bytes, d.zero(), d.weight, data(grad_weight)),
                     op);
}

#else  // built without cuDNN

namespace {
[[noreturn]] void no_cudnn(const char* op) {
  STRATA_FAIL(op,
              "Strata's CUDA backend was built without cuDNN (not found at configure time), "
              "which CUDA convolutions need");
}
}  // namespace

void conv2d_forward_kernel(const Tensor&, const Tensor&, const Tensor&, const Tensor*,
                           const cpu::Conv2dGeometry&) {
  no_cudnn("strata::conv2d");
}
void conv2d_backward_input_kernel(const Tensor&, const Tensor&, const Tensor&,
                                  const cpu::Conv2dGeometry&) {
  no_cudnn("strata::conv2d_backward_input");
}
void conv2d_backward_weight_kernel(const Tensor&, const Tensor&, const Tensor&,
                                   const cpu::Conv2dGeometry&) {
  no_cudnn("strata::conv2d_backward_weight");
}

#endif

}  // namespace strata::gpu
