// linear on the CPU: one GEMM (kernels/cpu/gemm.h) per thread's block of rows.
// Blocks are as few as the threads: every GEMM call packs the whole weight
// again, so many small blocks would spend their time copying it.
#include "kernels/cpu/linear.h"

#include <Eigen/Core>
#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

template <class T>
void linear(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor* bias,
            int64_t rows) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowVector = Eigen::Matrix<T, 1, Eigen::Dynamic>;
  const int64_t out_features = weight.sizes()[0], in_features = weight.sizes()[1];
  const T* w = weight.data_ptr<T>();
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const T* b = bias != nullptr ? bias->data_ptr<T>() : nullptr;
  // Blocks of at least kGemmSplitMacs (gemm.h). A batch of 32 through 784 -> 128
  // (3.2M multiply-adds) is split in two: its halves take the thin route (Note [Thin
  // products]), and it keeps the pool's threads awake for the ops after it (waking a
  // sleeping one costs tens of microseconds).
  const int64_t row_macs = std::max<int64_t>(1, in_features * out_features);
  const int64_t blocks =
      std::clamp<int64_t>(rows * row_macs / kGemmSplitMacs, 1, std::max(1, num_threads()));
  const int64_t block_rows = std::max<int64_t>(1, (rows + blocks - 1) / blocks);
  parallel_for(0, rows, block_rows, [&](int64_t begin, int64_t end) {
    // rows [R, in] @ weight^T [in, out]
    gemm<T>(end - begin, out_features, in_features, T(1), x + begin * in_features, in_features, 1,
            w, 1, in_features, T(0), y + begin * out_features, out_features);
    if (b != nullptr) {
      Eigen::Map<Matrix> result(y + begin * out_features, end - begin, out_features);
      result.rowwise() += Eigen::Map<const RowVector>(b, out_features);
    }
  });
}

}  // namespace

void linear_kernel(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor* bias,
                   int64_t rows) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::linear",
                                 [&] { linear<scalar_t>(out, input, weight, bias, rows); });
}

}  // namespace strata::cpu
