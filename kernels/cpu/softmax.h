#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}

namespace strata::cpu {

// A contiguous tensor seen as [outer, dim_size, inner], normalized over the middle dim.
struct SoftmaxShape {
  int64_t outer, dim_size, inner;
};

// out = softmax(input) or, with `log`, log_softmax(input); numerically stable (the
// maximum is subtracted first). Tensors are contiguous and of one floating dtype.
void softmax_kernel(const Tensor& out, const Tensor& input, SoftmaxShape s, bool log);
// The input gradient given the forward's output: y * (g - sum(g * y)) for softmax,
// g - exp(y) * sum(g) for log_softmax.
void softmax_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                             const Tensor& output, SoftmaxShape s, bool log);

}  // namespace strata::cpu
