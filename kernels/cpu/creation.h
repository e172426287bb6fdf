#pragma once

namespace strata {
class Tensor;
class Scalar;
}  // namespace strata

namespace strata::cpu {

// Kernels of the factories whose values depend on the position; `out` is contiguous.
// out[i] = start + i * step, exact in integers when out is Int64 and start and step are.
void arange_kernel(const Tensor& out, const Scalar& start, const Scalar& step);
// numel evenly spaced values from start to end, both endpoints exact.
void linspace_kernel(const Tensor& out, const Scalar& start, const Scalar& end);
// Ones on the main diagonal of the 2-D out, zeros elsewhere.
void eye_kernel(const Tensor& out);

}  // namespace strata::cpu
