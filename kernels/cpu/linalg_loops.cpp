// The products that are loops rather than GEMMs: dot, and einsum's general loop
// nest. A contiguous Float32 / Float64 dot is folded by fixed_order, so that its
// bits do not depend on where the vectors lie (Note [Sums do not depend on the
// address]).
#include <Eigen/Core>
#include <type_traits>
#include <vector>

#include "kernels/cpu/fixed_order_fold.h"
#include "kernels/cpu/linalg.h"
#include "kernels/cpu/linalg_dispatch.h"
#include "kernels/cpu/parallel.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

template <class T>
T dot_typed(const Tensor& a, const Tensor& b) {
  const int64_t n = a.numel();
  if (n == 0) return T(0);
  using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  const T* x = a.data_ptr<T>();
  const T* y = b.data_ptr<T>();
  const int64_t sx = a.strides()[0];
  const int64_t sy = b.strides()[0];
  if (sx == 1 && sy == 1) {
    if constexpr (std::is_floating_point_v<T>) {
      return fixed_order::sum_rows<T>(
          n, [](const auto& x_, const auto& y_) { return x_ * y_; }, fixed_order::Row<T>(x),
          fixed_order::Row<T>(y));
    } else {
      return Eigen::Map<const Vector>(x, n).dot(Eigen::Map<const Vector>(y, n));
    }
  }
  // Eigen folds a strided vector value by value, in order.
  using StridedVector = Eigen::Map<const Vector, Eigen::Unaligned, Eigen::InnerStride<>>;
  return StridedVector(x, n, Eigen::InnerStride<>(sx))
      .dot(StridedVector(y, n, Eigen::InnerStride<>(sy)));
}

template <class T>
void einsum_loop_typed(const Tensor& out, ArrayRef<Tensor> operands, const EinsumLoop& loop) {
  const int64_t num_letters = static_cast<int64_t>(loop.sizes.size());
  const int64_t num_out = loop.num_output_letters;
  const size_t num_operands = operands.size();
  int64_t out_numel = 1;
  int64_t summed_numel = 1;
  for (int64_t d = 0; d < num_letters; ++d) {
    (d < num_out ? out_numel : summed_numel) *= loop.sizes[d];
  }
  std::vector<const T*> data;
  for (const Tensor& t : operands) data.push_back(t.data_ptr<T>());
  T* out_data = out.data_ptr<T>();
  const int64_t work_per_output = std::max<int64_t>(1, summed_numel * int64_t(num_operands));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / work_per_output);
  parallel_for(0, out_numel, grain, [&](int64_t first, int64_t last) {
    DimVector index(static_cast<size_t>(num_letters), 0);
    DimVector offset(num_operands, 0);
    for (int64_t o = first; o < last; ++o) {
      // The output is contiguous in the order of its letters: o is its linear index.
      int64_t rest = o;
      for (int64_t d = num_out - 1; d >= 0; --d) {
        index[d] = rest % loop.sizes[d];
        rest /= loop.sizes[d];
      }
      for (size_t t = 0; t < num_operands; ++t) {
        offset[t] = 0;
        for (int64_t d = 0; d < num_out; ++d) offset[t] += index[d] * loop.operand_strides[t][d];
      }
      T sum = T(0);
      for (int64_t s = 0; s < summed_numel; ++s) {
        T product = T(1);
        for (size_t t = 0; t < num_operands; ++t) product *= data[t][offset[t]];
        sum += product;
        // Next summed index, the last letter fastest; a wrapped letter rewinds.
        for (int64_t d = num_letters - 1; d >= num_out; --d) {
          for (size_t t = 0; t < num_operands; ++t) offset[t] += loop.operand_strides[t][d];
          if (++index[d] < loop.sizes[d]) break;
          for (size_t t = 0; t < num_operands; ++t) {
            offset[t] -= loop.sizes[d] * loop.operand_strides[t][d];
          }
          index[d] = 0;
        }
      }
      out_data[o] = sum;
    }
  });
}

}  // namespace

void dot_kernel(const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_linalg_types(out.dtype(), "strata::dot", [&](auto tag) {
    using T = decltype(tag);
    *out.data_ptr<T>() = dot_typed<T>(a, b);
  });
}

void einsum_loop_kernel(const Tensor& out, ArrayRef<Tensor> operands, const EinsumLoop& loop) {
  dispatch_linalg_types(out.dtype(), "strata::einsum", [&](auto tag) {
    using T = decltype(tag);
    einsum_loop_typed<T>(out, operands, loop);
  });
}

}  // namespace strata::cpu
