// group_norm and its gradient on the CPU: one row (a sample's group of channels)
// at a time, so that a row read for its statistics is still in cache when it is
// normalised, or when the gradient's sums and the input gradient are formed. Its
// sums and the elements it forms go through kernels/cpu/fixed_order_fold.h, so
// that a row's bits do not depend on where it lies (Note [Sums do not depend on
// the address]).
#include "kernels/cpu/group_norm.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "kernels/cpu/fixed_order_fold.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/row_statistics.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

using fixed_order::Row;

int64_t rows_per_task(const GroupNormGeometry& g) {
  const int64_t row = g.channels / g.groups * g.positions;
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(row, 1));
}

// Per channel, (x - mean) * scale + bias with scale = rstd * weight. (Folding the
// mean into the shift, bias - mean * scale, would save the subtraction but cancel
// when rstd is large.)
template <class T>
void forward(const Tensor& out, const Tensor& input, const Tensor* weight, const Tensor* bias,
             const GroupNormGeometry& g) {
  const int64_t per_group = g.channels / g.groups, p = g.positions;
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const T* w = weight != nullptr ? weight->data_ptr<T>() : nullptr;
  const T* b = bias != nullptr ? bias->data_ptr<T>() : nullptr;
  parallel_for(0, g.batch * g.groups, rows_per_task(g), [&](int64_t begin, int64_t end) {
    if (p == 0) return;  // no values to normalise (and no statistics)
    for (int64_t r = begin; r < end; ++r) {
      const int64_t first_channel = (r % g.groups) * per_group;
      const int64_t first = r * per_group * p;
      const RowStatistics<T> s = row_statistics(Row<T>(x + first), per_group * p, g.eps);
      for (int64_t i = 0; i < per_group; ++i) {
        const int64_t c = first_channel + i;
        const T scale = w != nullptr ? s.rstd * w[c] : s.rstd;
        const T shift = b != nullptr ? b[c] : T(0);
        fixed_order::map_rows(
            y + first + i * p, p,
            [&](const auto& values) { return (values - s.mean) * scale + shift; },
            Row<T>(x + first + i * p));
      }
    }
  });
}

// With h = grad_output * weight[c], c_x = x - mean and r = rstd over a row of n
// values: grad_input = r * (h - mean(h)) - c_x * r^3 * mean(h * c_x). Both means are
// sums over the row's channels of weight[c] times the channel's sums of grad_output
// and of grad_output * c_x, which are the channel's grad_bias and grad_weight / r.
template <class T>
void backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
              const Tensor& grad_output, const Tensor& input, const Tensor* weight,
              const GroupNormGeometry& g) {
  const int64_t per_group = g.channels / g.groups, p = g.positions, count = per_group * p;
  const T* x = input.data_ptr<T>();
  const T* go = grad_output.data_ptr<T>();
  const T* w = weight != nullptr ? weight->data_ptr<T>() : nullptr;
  T* dx = grad_input.data_ptr<T>();
  T* dw = grad_weight.data_ptr<T>();
  T* db = grad_bias.data_ptr<T>();
  parallel_for(0, g.batch * g.groups, rows_per_task(g), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      // grad_weight and grad_bias [N, C] hold the row's channels at r * per_group.
      T* dw_row = dw + r * per_group;
      T* db_row = db + r * per_group;
      if (count == 0) {
        std::fill(dw_row, dw_row + per_group, T(0));
        std::fill(db_row, db_row + per_group, T(0));
        continue;
      }
      const int64_t first_channel = (r % g.groups) * per_group;
      const RowStatistics<T> s = row_statistics(Row<T>(x + r * count), count, g.eps);
      auto channel = [&](const T* data, int64_t i) { return Row<T>(data + r * count + i * p); };
      T h_sum = 0, hc_sum = 0;
      for (int64_t i = 0; i < per_group; ++i) {
        const Row<T> grad = channel(go, i), values = channel(x, i);
        const T sum = fixed_order::sum_rows<T>(
            p, [](const auto& g_) { return g_; }, grad);
        const T centred_sum = fixed_order::sum_rows<T>(
            p, [&](const auto& g_, const auto& x_) { return g_ * (x_ - s.mean); }, grad, values);
        db_row[i] = sum;
        dw_row[i] = centred_sum * s.rstd;
        const T scale = w != nullptr ? w[first_channel + i] : T(1);
        h_sum += scale * sum;
        hc_sum += scale * centred_sum;
      }
      // r * (h - mean(h) - c_x * r^2 mean(h * c_x)): the terms inside are of the
      // size of h, so that rows of nearly equal values (r large) cancel no more than
      // h's precision before the one scaling by r.
      const T n = static_cast<T>(count);
      const T along = s.rstd * s.rstd * hc_sum / n;  // multiplies c_x
      const T h_mean = h_sum / n;
      for (int64_t i = 0; i < per_group; ++i) {
        const T scale = w != nullptr ? w[first_channel + i] : T(1);
        fixed_order::map_rows(
            dx + r * count + i * p, p,
            [&](const auto& g_, const auto& x_) {
              return (g_ * scale - (x_ - s.mean) * along - h_mean) * s.rstd;
            },
            channel(go, i), channel(x, i));
      }
    }
  });
}

}  // namespace

void group_norm_kernel(const Tensor& out, const Tensor& input, const Tensor* weight,
                       const Tensor* bias, const GroupNormGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::group_norm",
                                 [&] { forward<scalar_t>(out, input, weight, bias, g); });
}

void group_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight,
                                const Tensor& grad_bias, const Tensor& grad_output,
                                const Tensor& input, const Tensor* weight,
                                const GroupNormGeometry& g) {
  STRATA_DISPATCH_FLOATING_TYPES(grad_input.dtype(), "strata::group_norm_backward", [&] {
    backward<scalar_t>(grad_input, grad_weight, grad_bias, grad_output, input, weight, g);
  });
}

}  // namespace strata::cpu
