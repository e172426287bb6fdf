#pragma once

// Random ops on CUDA with the CPU kernels' contracts (kernels/cpu/random.h): element
// i of a contiguous output is drawn from Philox counter offset + i by the same
// functions (tensor/philox.h), so one seed gives the same numbers on both
// backends: bit for bit for uniform, randint, bernoulli and dropout masks; normal
// samples agree to the last few ulps of the devices' log, sqrt and cos. Plain C++.

#include <cstdint>

#include "kernels/cpu/random.h"

namespace strata::gpu {

using cpu::PhiloxStream;

void uniform_kernel(const Tensor& out, PhiloxStream stream);
void standard_normal_kernel(const Tensor& out, PhiloxStream stream);
void randint_kernel(const Tensor& out, int64_t low, int64_t high, PhiloxStream stream);
void bernoulli_kernel(const Tensor& out, const Tensor& p, PhiloxStream stream);
void normal_kernel(const Tensor& out, const Tensor& mean, const Tensor& std, PhiloxStream stream);
// Waits for the device to read the answer back.
bool all_within(const Tensor& t, double low, double high);
void dropout_mask_kernel(const Tensor& mask, double p, uint64_t seed, uint64_t first);

}  // namespace strata::gpu
