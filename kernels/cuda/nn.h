#pragma once

// Neural-network kernels on CUDA with the CPU kernels' contracts (kernels/cpu/loss.h,
// nn_misc.h, pool.h, conv.h): contiguous tensors of one floating dtype, outputs
// preallocated, every tensor on the output's device. Plain C++: no CUDA header.

#include <cstdint>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/pool.h"

namespace strata {
class Tensor;
}

namespace strata::gpu {

// Throws, after waiting for the device, on a target outside [0, classes) that is
// not ignore_index; sums accumulate in double as on the CPU.
void nll_loss_kernel(const Tensor& out, const Tensor& input, const Tensor& target,
                     const Tensor* weight, int64_t reduction, int64_t ignore_index);
void layer_norm_kernel(const Tensor& out, const Tensor& input, const Tensor* weight,
                       const Tensor* bias, int64_t rows, double eps);

// The pooling backward kernels accumulate through atomics (windows overlap).
void max_pool2d_kernel(const Tensor& values, const Tensor& indices, const Tensor& input,
                       const cpu::Pool2dGeometry& g);
void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& indices, const cpu::Pool2dGeometry& g);
void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const cpu::Pool2dGeometry& g);
void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const cpu::Pool2dGeometry& g);

// Through cuDNN (kernels/cuda/conv.cpp), in full FP32/FP64 math (no TF32).
void conv2d_forward_kernel(const Tensor& out, const Tensor& input, const Tensor& weight,
                           const Tensor* bias, const cpu::Conv2dGeometry& g);
void conv2d_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                  const Tensor& weight, const cpu::Conv2dGeometry& g);
void conv2d_backward_weight_kernel(const Tensor& grad_weight, const Tensor& grad_output,
                                   const Tensor& input, const cpu::Conv2dGeometry& g);

}  // namespace strata::gpu
