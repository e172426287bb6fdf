// Built instead of kernels/cuda/ when Strata is configured without CUDA: no device,
// no CUDA allocator, so no CUDA tensor exists to reach the CUDA kernels that the
// op rows register; each raises an error all the same.
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/linalg.h"
#include "kernels/cuda/reduction.h"
#include "kernels/cuda/softmax.h"
#include "tensor/allocator.h"
#include "tensor/device.h"
#include "tensor/error.h"

namespace strata {

int cuda_device_count() { return 0; }
CudaAllocatorStats cuda_allocator_stats() { return {}; }
void set_cuda_allocator_caching(bool) {}
bool cuda_allocator_caching() { return false; }
void release_cuda_allocator_cache() {}
void cuda_synchronize(int) {}

namespace gpu {
namespace {
[[noreturn]] void unavailable() {
  STRATA_FAIL("cuda", "Strata was built without the CUDA backend (STRATA_CUDA=OFF or no nvcc)");
}
}  // namespace

void unary_kernel(cpu::UnaryOp, const Tensor&, const Tensor&) { unavailable(); }
void softplus_kernel(const Tensor&, const Tensor&, const Scalar&, const Scalar&) { unavailable(); }
void pow_scalar_kernel(const Tensor&, const Tensor&, const Scalar&) { unavailable(); }
void clamp_kernel(const Tensor&, const Tensor&, const std::optional<Scalar>&,
                  const std::optional<Scalar>&) {
  unavailable();
}
void binary_kernel(cpu::BinaryOp, const Tensor&, const Tensor&, const Tensor&, const Scalar&) {
  unavailable();
}
void compare_kernel(cpu::CompareOp, const Tensor&, const Tensor&, const Tensor&) { unavailable(); }
void where_kernel(const Tensor&, const Tensor&, const Tensor&, const Tensor&) { unavailable(); }
void atan2_kernel(const Tensor&, const Tensor&, const Tensor&) { unavailable(); }
void addcmul_kernel(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Scalar&) {
  unavailable();
}
void mul_add_kernel(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  unavailable();
}
void relu_backward_kernel(const Tensor&, const Tensor&, const Tensor&) { unavailable(); }
void softmax_kernel(const Tensor&, const Tensor&, cpu::SoftmaxShape, bool) { unavailable(); }
void softmax_backward_kernel(const Tensor&, const Tensor&, const Tensor&, cpu::SoftmaxShape, bool) {
  unavailable();
}
void fill_kernel(const Tensor&, const Scalar&) { unavailable(); }
void copy_kernel(const Tensor&, const Tensor&) { unavailable(); }
void copy_on_device(const Tensor&, const Tensor&) { unavailable(); }
void mm_kernel(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&) {
  unavailable();
}
void bmm_kernel(const Tensor&, const Tensor&, const Tensor&) { unavailable(); }
void sum_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void mean_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void prod_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void amax_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void amin_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }

}  // namespace gpu
}  // namespace strata
