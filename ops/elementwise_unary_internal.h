#pragma once

// The derivatives of the unary family (ops/elementwise_unary_derivatives.cpp),
// shared by the out-of-place rows (ops/elementwise_unary.cpp) and the in-place
// ones (ops/elementwise_unary_inplace.cpp), so an op and its in-place variant
// differentiate by one formula.

#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"

namespace strata::elementwise {

// The derivative facet of the unary op `op` (both modes). An in-place variant
// uses it as is: its formulas see the input as it was before the write.
Facet<Kernel> unary_derivative(cpu::UnaryOp op);
// softplus(self, beta, threshold), pow.Tensor_Scalar(self, exponent) and
// clamp(self, min, max), the last also for clamp_.
KernelFunction softplus_derivative();
KernelFunction pow_scalar_derivative();
KernelFunction clamp_derivative();

}  // namespace strata::elementwise
