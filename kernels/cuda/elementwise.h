#pragma once

// The CUDA elementwise kernels, with the CPU kernels' contracts
// (kernels/cpu/elementwise.h): the op files compute shapes and dtypes once and
// call the kernel of the output's device. Plain C++: no CUDA header needed. In a
// build without CUDA these raise an error (kernels/cpu/no_cuda.cpp); no CUDA
// tensor can exist there to reach them.
//
// Inputs live on the output's device, except 0-dim CPU tensors (C++ numbers in
// `x * 2.0`), which are read once and passed to the kernel by value.

#include <optional>

#include "kernels/cpu/elementwise.h"

namespace strata::gpu {

void unary_kernel(cpu::UnaryOp op, const Tensor& out, const Tensor& in);
void softplus_kernel(const Tensor& out, const Tensor& in, const Scalar& beta,
                     const Scalar& threshold);
void pow_scalar_kernel(const Tensor& out, const Tensor& base, const Scalar& exponent);
void clamp_kernel(const Tensor& out, const Tensor& in, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max);
void binary_kernel(cpu::BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                   const Scalar& alpha);
void compare_kernel(cpu::CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b);
// out[i] = fn(a[i], b[i]) for atan2, in out's floating dtype.
void atan2_kernel(const Tensor& out, const Tensor& a, const Tensor& b);
// out = self + value * a * b; out = a * b + c * d; out = output > 0 ? grad : 0.
void addcmul_kernel(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                    const Scalar& value);
void mul_add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                    const Tensor& d);
void relu_backward_kernel(const Tensor& out, const Tensor& grad, const Tensor& output);
void fill_kernel(const Tensor& out, const Scalar& value);
// out = src (broadcast, converting dtype), on one device or between the host and
// a device (through a pinned staging buffer when src or out is not contiguous in
// the copy's direction).
void copy_kernel(const Tensor& out, const Tensor& src);
// copy_kernel's part on one device: out and src on the same GPU.
void copy_on_device(const Tensor& out, const Tensor& src);

}  // namespace strata::gpu
