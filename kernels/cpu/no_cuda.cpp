// Built instead of kernels/cuda/ when Strata is configured without CUDA: no device,
// no CUDA allocator, so no CUDA tensor exists to reach the CUDA kernels that the
// op rows register; each raises an error all the same.
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/linalg.h"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/random.h"
#include "kernels/cuda/reduction.h"
#include "kernels/cuda/scan_sort.h"
#include "kernels/cuda/softmax.h"
#include "tensor/allocator.h"
#include "tensor/device.h"
#include "tensor/error.h"

namespace strata {

int cuda_device_count() { return 0; }
CudaAllocatorStats cuda_allocator_stats() { return {}; }
void reset_cuda_allocator_peak() {}
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
void einsum_loop_kernel(const Tensor&, ArrayRef<Tensor>, const cpu::EinsumLoop&) { unavailable(); }
void sum_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void mean_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void prod_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void amax_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void amin_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void max_with_index_kernel(const Tensor&, const Tensor&, const Tensor&, DimMask) { unavailable(); }
void min_with_index_kernel(const Tensor&, const Tensor&, const Tensor&, DimMask) { unavailable(); }
void logsumexp_kernel(const Tensor&, const Tensor&, DimMask) { unavailable(); }
void var_kernel(const Tensor&, const Tensor&, DimMask, int64_t, bool) { unavailable(); }
void norm_kernel(const Tensor&, const Tensor&, DimMask, cpu::NormOrder) { unavailable(); }
void cumsum_kernel(const Tensor&, const Tensor&, cpu::Lanes) { unavailable(); }
void sort_kernel(const Tensor&, const Tensor&, const Tensor&, cpu::Lanes, bool) { unavailable(); }

void check_index_range(const Tensor&, int64_t, int64_t, const char*) { unavailable(); }
void index_select_kernel(const Tensor&, const Tensor&, int64_t, const Tensor&) { unavailable(); }
void gather_kernel(const Tensor&, const Tensor&, int64_t, const Tensor&) { unavailable(); }
void scatter_add_kernel(const Tensor&, int64_t, const Tensor&, const Tensor&) { unavailable(); }
void index_add_kernel(const Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&) {
  unavailable();
}
void take_blocks_kernel(const Tensor&, const Tensor&, const Tensor&, int64_t) { unavailable(); }
void put_blocks_kernel(const Tensor&, const Tensor&, const Tensor&, int64_t, bool) {
  unavailable();
}
void masked_fill_kernel(const Tensor&, const Tensor&, const Tensor&, const Scalar&) {
  unavailable();
}
void embedding_kernel(const Tensor&, const Tensor&, const Tensor&) { unavailable(); }
void cat_kernel(const Tensor&, ArrayRef<Tensor>, int64_t) { unavailable(); }
void nll_loss_kernel(const Tensor&, const Tensor&, const Tensor&, const Tensor*, int64_t, int64_t) {
  unavailable();
}
void layer_norm_kernel(const Tensor&, const Tensor&, const Tensor*, const Tensor*, int64_t, double) {
  unavailable();
}
void max_pool2d_kernel(const Tensor&, const Tensor&, const Tensor&, const cpu::Pool2dGeometry&) {
  unavailable();
}
void max_pool2d_backward_kernel(const Tensor&, const Tensor&, const Tensor&,
                                const cpu::Pool2dGeometry&) {
  unavailable();
}
void avg_pool2d_kernel(const Tensor&, const Tensor&, const cpu::Pool2dGeometry&) { unavailable(); }
void avg_pool2d_backward_kernel(const Tensor&, const Tensor&, const cpu::Pool2dGeometry&) {
  unavailable();
}
void conv2d_forward_kernel(const Tensor&, const Tensor&, const Tensor&, const Tensor*,
                           const cpu::Conv2dGeometry&) {
  unavailable();
}
void conv2d_backward_input_kernel(const Tensor&, const Tensor&, const Tensor&,
                                  const cpu::Conv2dGeometry&) {
  unavailable();
}
void conv2d_backward_weight_kernel(const Tensor&, const Tensor&, const Tensor&,
                                   const cpu::Conv2dGeometry&) {
  unavailable();
}
void uniform_kernel(const Tensor&, PhiloxStream) { unavailable(); }
void standard_normal_kernel(const Tensor&, PhiloxStream) { unavailable(); }
void randint_kernel(const Tensor&, int64_t, int64_t, PhiloxStream) { unavailable(); }
void bernoulli_kernel(const Tensor&, const Tensor&, PhiloxStream) { unavailable(); }
void normal_kernel(const Tensor&, const Tensor&, const Tensor&, PhiloxStream) { unavailable(); }
bool all_within(const Tensor&, double, double) { unavailable(); }
void dropout_mask_kernel(const Tensor&, double, uint64_t, uint64_t) { unavailable(); }

}  // namespace gpu
}  // namespace strata
