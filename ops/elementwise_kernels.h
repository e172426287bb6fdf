#pragma once

// The elementwise kernel of a tensor's device, for op functions written once for
// every backend: they compute output shapes and dtypes, allocate on the inputs'
// device and call these, which pick the CPU kernel (kernels/cpu/elementwise.h)
// or the CUDA one (kernels/cuda/elementwise.h) from out's device. A row registers
// such a function as both its cpu and cuda kernel.

#include <optional>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/elementwise.h"
#include "tensor/tensor.h"

namespace strata::on_device {

// A CPU output with an input on a GPU (an in-place op on a CPU tensor): the error
// names both devices.
[[noreturn]] void throw_mixed_devices(const char* op, Device out, Device input);
template <class... Ts>
void check_host_inputs(const char* op, const Tensor& out, const Ts&... inputs) {
  if (__builtin_expect((inputs.device().is_cuda() || ...), 0)) {
    Device gpu = out.device();
    ((gpu = inputs.device().is_cuda() ? inputs.device() : gpu), ...);
    throw_mixed_devices(op, out.device(), gpu);
  }
}

inline void unary_kernel(cpu::UnaryOp op, const Tensor& out, const Tensor& in) {
  out.device().is_cuda() ? gpu::unary_kernel(op, out, in) : cpu::unary_kernel(op, out, in);
}
inline void softplus_kernel(const Tensor& out, const Tensor& in, const Scalar& beta,
                            const Scalar& threshold) {
  out.device().is_cuda() ? gpu::softplus_kernel(out, in, beta, threshold)
                         : cpu::softplus_kernel(out, in, beta, threshold);
}
inline void pow_scalar_kernel(const Tensor& out, const Tensor& base, const Scalar& exponent) {
  out.device().is_cuda() ? gpu::pow_scalar_kernel(out, base, exponent)
                         : cpu::pow_scalar_kernel(out, base, exponent);
}
inline void clamp_kernel(const Tensor& out, const Tensor& in, const std::optional<Scalar>& min,
                         const std::optional<Scalar>& max) {
  out.device().is_cuda() ? gpu::clamp_kernel(out, in, min, max)
                         : cpu::clamp_kernel(out, in, min, max);
}
inline void binary_kernel(cpu::BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                          const Scalar& alpha) {
  if (out.device().is_cuda()) return gpu::binary_kernel(op, out, a, b, alpha);
  check_host_inputs("elementwise", out, a, b);
  cpu::binary_kernel(op, out, a, b, alpha);
}
inline void compare_kernel(cpu::CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.device().is_cuda()) return gpu::compare_kernel(op, out, a, b);
  check_host_inputs("elementwise", out, a, b);
  cpu::compare_kernel(op, out, a, b);
}
inline void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a,
                         const Tensor& b) {
  if (out.device().is_cuda()) return gpu::where_kernel(out, condition, a, b);
  check_host_inputs("strata::where", out, condition, a, b);
  cpu::where_kernel(out, condition, a, b);
}
inline void addcmul_kernel(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                           const Scalar& value) {
  if (out.device().is_cuda()) return gpu::addcmul_kernel(out, self, a, b, value);
  check_host_inputs("strata::addcmul", out, self, a, b);
  cpu::addcmul_kernel(out, self, a, b, value);
}
inline void mul_add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                           const Tensor& d) {
  if (out.device().is_cuda()) return gpu::mul_add_kernel(out, a, b, c, d);
  check_host_inputs("strata::mul_add", out, a, b, c, d);
  cpu::mul_add_kernel(out, a, b, c, d);
}
inline void relu_backward_kernel(const Tensor& out, const Tensor& grad, const Tensor& output) {
  if (out.device().is_cuda()) return gpu::relu_backward_kernel(out, grad, output);
  check_host_inputs("strata::relu_backward", out, grad, output);
  cpu::relu_backward_kernel(out, grad, output);
}
inline void fill_kernel(const Tensor& out, const Scalar& value) {
  out.device().is_cuda() ? gpu::fill_kernel(out, value) : cpu::fill_kernel(out, value);
}
// Either side may be on a GPU: the CUDA copy also moves values between host and device.
inline void copy_kernel(const Tensor& out, const Tensor& src) {
  out.device().is_cuda() || src.device().is_cuda() ? gpu::copy_kernel(out, src)
                                                   : cpu::copy_kernel(out, src);
}

// The device of an elementwise result: a GPU when any input is on one (the CUDA
// kernel then accepts only 0-dim CPU tensors beside it, C++ numbers, and names
// both devices for anything else), else the CPU.
template <class... Ts>
Device result_device(const Tensor& first, const Ts&... rest) {
  Device device = first.device();
  ((device = device.is_cuda() ? device : rest.device()), ...);
  return device;
}

}  // namespace strata::on_device
