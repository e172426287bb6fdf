// softmax / log_softmax and their backward on the CPU. A reduced dim that is
// innermost is walked row by row; otherwise a block of up to kColumnBlock adjacent
// columns is walked together, so both layouts vectorize along contiguous memory.
// Sums along a row, and the elements a transcendental function or a fused
// multiply-add forms, go through kernels/cpu/fixed_order_fold.h, so that a row's
// bits do not depend on where the row lies (Note [Sums do not depend on the
// address]).
#include "kernels/cpu/softmax.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "kernels/cpu/fixed_order_fold.h"
#include "kernels/cpu/parallel.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

constexpr int64_t kColumnBlock = 512;

template <class T>
using Array = Eigen::Array<T, Eigen::Dynamic, 1>;

// Calls fn(offset, width) for each block of `width` adjacent columns of the
// [outer, dim_size, inner] layout (offset: its first element), in parallel.
template <class Fn>
void for_each_column_block(SoftmaxShape s, Fn&& fn) {
  const int64_t width = std::min(s.inner, kColumnBlock);
  const int64_t blocks = (s.inner + width - 1) / width;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (s.dim_size * width));
  parallel_for(0, s.outer * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t o = item / blocks, first = (item % blocks) * width;
      fn(o * s.dim_size * s.inner + first, std::min(width, s.inner - first));
    }
  });
}

template <class T, bool kLog>
void forward(const Tensor& out, const Tensor& input, SoftmaxShape s) {
  using fixed_order::Row;
  const T* in = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const int64_t n = s.dim_size, stride = s.inner;
  auto exp_of_difference = [](const auto& x, const auto& m) { return (x - m).exp(); };
  for_each_column_block(s, [&](int64_t offset, int64_t width) {
    using Map = Eigen::Map<Array<T>>;
    using ConstMap = Eigen::Map<const Array<T>>;
    if (stride == 1) {
      const ConstMap x(in + offset, n);
      Map result(y + offset, n);
      const T max = x.maxCoeff();
      if constexpr (kLog) {
        result = x - max;
        result -= std::log(fixed_order::sum_rows<T>(
            n, [](const auto& v) { return v.exp(); }, Row<T>(result.data())));
      } else {
        const T sum = fixed_order::map_and_sum_rows(
            result.data(), n, [&](const auto& v) { return (v - max).exp(); }, Row<T>(in + offset));
        result *= T(1) / sum;
      }
      return;
    }
    auto row = [&](const auto* base, int64_t d) {
      return ConstMap(base + offset + d * stride, width);
    };
    auto out_row = [&](int64_t d) { return Map(y + offset + d * stride, width); };
    Array<T> max = row(in, 0);
    for (int64_t d = 1; d < n; ++d) max = max.max(row(in, d));
    const Row<T> max_row(max.data());
    // sum, max, log_sum and inverse are arrays of their own, aligned: Eigen forms
    // their elements by position.
    Array<T> sum = Array<T>::Zero(width);
    for (int64_t d = 0; d < n; ++d) {
      if constexpr (kLog) {
        out_row(d) = row(in, d) - max;
        sum += out_row(d).exp();
      } else {
        fixed_order::map_rows(out_row(d).data(), width, exp_of_difference,
                              Row<T>(in + offset + d * stride), max_row);
        sum += out_row(d);
      }
    }
    if constexpr (kLog) {
      const Array<T> log_sum = sum.log();
      for (int64_t d = 0; d < n; ++d) out_row(d) -= log_sum;
    } else {
      const Array<T> inverse = sum.inverse();
      for (int64_t d = 0; d < n; ++d) out_row(d) *= inverse;
    }
  });
}

template <class T, bool kLog>
void backward(const Tensor& grad_input, const Tensor& grad_output, const Tensor& output,
              SoftmaxShape s) {
  using fixed_order::Row;
  const T* g = grad_output.data_ptr<T>();
  const T* y = output.data_ptr<T>();
  T* gi = grad_input.data_ptr<T>();
  const int64_t n = s.dim_size, stride = s.inner;
  // softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g). `sum` is a scalar
  // for a row, an array for a block of columns.
  auto summand = [](const auto& g_, const auto& y_) {
    if constexpr (kLog) {
      return g_;
    } else {
      return g_ * y_;
    }
  };
  auto gradient = [](const auto& g_, const auto& y_, const auto& sum) {
    if constexpr (kLog) {
      return g_ - y_.exp() * sum;
    } else {
      return y_ * (g_ - sum);
    }
  };
  for_each_column_block(s, [&](int64_t offset, int64_t width) {
    using ConstMap = Eigen::Map<const Array<T>>;
    if (stride == 1) {
      const Row<T> g_row(g + offset), y_row(y + offset);
      const T sum = fixed_order::sum_rows<T>(n, summand, g_row, y_row);
      fixed_order::map_rows(
          gi + offset, n, [&](const auto& g_, const auto& y_) { return gradient(g_, y_, sum); },
          g_row, y_row);
      return;
    }
    auto g_row = [&](int64_t d) { return ConstMap(g + offset + d * stride, width); };
    auto y_row = [&](int64_t d) { return ConstMap(y + offset + d * stride, width); };
    Array<T> sum = summand(g_row(0), y_row(0));
    for (int64_t d = 1; d < n; ++d) sum += summand(g_row(d), y_row(d));
    const Row<T> sum_row(sum.data());
    for (int64_t d = 0; d < n; ++d) {
      const int64_t first = offset + d * stride;
      fixed_order::map_rows(gi + first, width, gradient, Row<T>(g + first), Row<T>(y + first),
                            sum_row);
    }
  });
}

}  // namespace

void softmax_kernel(const Tensor& out, const Tensor& input, SoftmaxShape s, bool log) {
  if (out.numel() == 0) return;
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), log ? "strata::log_softmax" : "strata::softmax", [&] {
    log ? forward<scalar_t, true>(out, input, s) : forward<scalar_t, false>(out, input, s);
  });
}

void softmax_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                             const Tensor& output, SoftmaxShape s, bool log) {
  if (grad_input.numel() == 0) return;
  STRATA_DISPATCH_FLOATING_TYPES(
      grad_input.dtype(), log ? "strata::log_softmax_backward" : "strata::softmax_backward", [&] {
        log ? backward<scalar_t, true>(grad_input, grad_output, output, s)
            : backward<scalar_t, false>(grad_input, grad_output, output, s);
      });
}

}  // namespace strata::cpu
