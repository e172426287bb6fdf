#pragma once

// softmax and log_softmax on CUDA, with the CPU kernels' contracts
// (kernels/cpu/softmax.h): contiguous tensors seen as [outer, dim_size, inner].

#include "kernels/cpu/softmax.h"

namespace strata::gpu {

void softmax_kernel(const Tensor& out, const Tensor& input, cpu::SoftmaxShape s, bool log);
void softmax_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                             const Tensor& output, cpu::SoftmaxShape s, bool log);

}  // namespace strata::gpu
