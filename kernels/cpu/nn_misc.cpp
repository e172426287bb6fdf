// embedding, layer_norm and the dropout mask on the CPU. layer_norm's sums and the
// elements its gradient forms go through kernels/cpu/fixed_order_fold.h, so that a
// row's bits do not depend on where it lies (Note [Sums do not depend on the
// address]).
#include "kernels/cpu/nn_misc.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/fixed_order_fold.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/row_statistics.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/error.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// A uniform double in [0, 1) that is a pure function of (seed, counter): Philox,
// see Note [Counter-based random numbers] in tensor/generator.h.
double uniform(uint64_t seed, uint64_t counter) {
  return philox::uniform<double>(philox::random_words(seed, counter));
}

using fixed_order::Row;

template <class T>
void layer_norm(const Tensor& out, const Tensor& input, const Tensor* weight, const Tensor* bias,
                int64_t rows, double eps) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  const int64_t features = input.numel() / std::max<int64_t>(rows, 1);
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const T* w = weight != nullptr ? weight->data_ptr<T>() : nullptr;
  const T* b = bias != nullptr ? bias->data_ptr<T>() : nullptr;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(features, 1));
  if (features == 0) return;
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      Eigen::Map<const Array> row(x + r * features, features);
      Eigen::Map<Array> result(y + r * features, features);
      const RowStatistics<T> s = row_statistics(Row<T>(x + r * features), features, eps);
      result = row - s.mean;
      result *= s.rstd;
      if (w != nullptr) result *= Eigen::Map<const Array>(w, features);
      if (b != nullptr) result += Eigen::Map<const Array>(b, features);
    }
  });
}

// Per row, with h = g * weight, c = x - mean and r = 1 / std, the gradient of the
// normalisation applied to h: r * (h - mean(h)) - c * (r^3 * mean(h * c)). The row's
// statistics are recomputed here rather than saved by the forward: the row is read
// from cache, where a saved mean and rstd would cost an output of their own.
template <class T>
void layer_norm_backward(const Tensor& grad_input, const Tensor& grad_output, const Tensor& input,
                         const Tensor* weight, int64_t rows, double eps) {
  const int64_t features = input.numel() / std::max<int64_t>(rows, 1);
  const T* x = input.data_ptr<T>();
  const T* g = grad_output.data_ptr<T>();
  const T* w = weight != nullptr ? weight->data_ptr<T>() : nullptr;
  T* dx = grad_input.data_ptr<T>();
  const T count = static_cast<T>(features);
  if (features == 0) return;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(features, 1));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const Row<T> row(x + r * features), grad(g + r * features);
      const RowStatistics<T> s = row_statistics(row, features, eps);
      const T mean = s.mean, rstd = s.rstd;
      // h = g * weight, or g; c = x - mean.
      auto gradient = [&](const auto& h, const auto& x_, T h_mean, T hc_mean) {
        return rstd * (h - h_mean) - (x_ - mean) * (rstd * rstd * rstd * hc_mean);
      };
      T* result = dx + r * features;
      if (w != nullptr) {
        const Row<T> scale(w);
        const T h_mean =
            fixed_order::sum_rows<T>(
                features, [](const auto& g_, const auto& w_) { return g_ * w_; }, grad, scale) /
            count;
        const T hc_mean = fixed_order::sum_rows<T>(
                              features,
                              [&](const auto& g_, const auto& w_, const auto& x_) {
                                return g_ * w_ * (x_ - mean);
                              },
                              grad, scale, row) /
                          count;
        fixed_order::map_rows(
            result, features,
            [&](const auto& g_, const auto& w_, const auto& x_) {
              return gradient(g_ * w_, x_, h_mean, hc_mean);
            },
            grad, scale, row);
      } else {
        const T h_mean = mean_of(grad, features);
        const T hc_mean =
            fixed_order::sum_rows<T>(
                features, [&](const auto& g_, const auto& x_) { return g_ * (x_ - mean); }, grad,
                row) /
            count;
        fixed_order::map_rows(
            result, features,
            [&](const auto& g_, const auto& x_) { return gradient(g_, x_, h_mean, hc_mean); }, grad,
            row);
      }
    }
  });
}

}  // namespace

void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const int64_t num_rows = weight.sizes()[0];
  const int64_t row_bytes = weight.sizes()[1] * static_cast<int64_t>(element_size(weight.dtype()));
  const int64_t* index = indices.data_ptr<int64_t>();
  const char* table = static_cast<const char*>(weight.data_ptr());
  char* dest = static_cast<char*>(out.data_ptr());
  const int64_t count = indices.numel();
  for (int64_t i = 0; i < count; ++i) {
    STRATA_CHECK(index[i] >= 0 && index[i] < num_rows, "strata::embedding", "index ", index[i],
                 " (at position ", i, ") is out of range for a weight of ", num_rows, " rows");
  }
  const int64_t grain =
      std::max<int64_t>(1, kElementwiseGrain * 4 / std::max<int64_t>(row_bytes, 1));
  parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::memcpy(dest + i * row_bytes, table + index[i] * row_bytes,
                  static_cast<size_t>(row_bytes));
    }
  });
}

void layer_norm_kernel(const Tensor& out, const Tensor& input, const Tensor* weight,
                       const Tensor* bias, int64_t rows, double eps) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::layer_norm", [&] {
    layer_norm<scalar_t>(out, input, weight, bias, rows, eps);
  });
}

void layer_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& input, const Tensor* weight, int64_t rows,
                                double eps) {
  STRATA_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "strata::layer_norm_backward", [&] {
    layer_norm_backward<scalar_t>(grad_input, grad_output, input, weight, rows, eps);
  });
}

void dropout_mask_kernel(const Tensor& mask, double p, uint64_t seed, uint64_t first) {
  STRATA_DISPATCH_FLOATING_TYPES(mask.dtype(), "strata::dropout", [&] {
    // p == 1 keeps nothing; 1 / (1 - p) would be infinite.
    const scalar_t kept = p < 1 ? static_cast<scalar_t>(1.0 / (1.0 - p)) : scalar_t(0);
    scalar_t* m = mask.data_ptr<scalar_t>();
    parallel_for(0, mask.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        m[i] = uniform(seed, first + static_cast<uint64_t>(i)) < p ? scalar_t(0) : kept;
      }
    });
  });
}

}  // namespace strata::cpu
