#pragma once

// The elementwise ops that derivative formulas are written with, registered
// operators but not part of the public API (ops/elementwise.h): each is one pass
// where its formula written with public ops took several, and each has
// derivatives of its own, so nested transforms stay within them.

#include "tensor/tensor.h"

namespace strata {

// a * b + c * d in one pass, broadcasting all four: a product's tangent
// t_a b + a t_b (ops/elementwise_fused.cpp).
Tensor mul_add(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d);
// relu's gradient: grad where output > 0, else 0, in one pass (output is relu's, or
// its input: both are positive at the same places).
Tensor relu_backward(const Tensor& grad, const Tensor& output);
// The gradients of sin and cos: grad * cos(self) and -grad * sin(self)
// (ops/elementwise_trig_backward.cpp).
Tensor sin_backward(const Tensor& grad, const Tensor& self);
Tensor cos_backward(const Tensor& grad, const Tensor& self);

}  // namespace strata
