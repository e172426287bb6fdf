// Loss kernels: nll_loss and mse_loss on the CPU.
#include "kernels/cpu/loss.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fixed_order_fold.h"
#include "kernels/cpu/parallel.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

constexpr int64_t kNone = 0, kMean = 1;
// Sums run over fixed blocks (vectorized in T) whose partial sums add up in double,
// in block order: accurate, and independent of the thread count. A block is folded
// by fixed_order (Note [Sums do not depend on the address]).
constexpr int64_t kSumBlock = 8192;

template <class T>
void nll_loss(const Tensor& out, const Tensor& input, const Tensor& target, const Tensor* weight,
              int64_t reduction, int64_t ignore_index) {
  const int64_t rows = target.numel();
  const int64_t classes = input.sizes().back();
  const T* x = input.data_ptr<T>();
  const int64_t* t = target.data_ptr<int64_t>();
  const T* w = weight != nullptr ? weight->data_ptr<T>() : nullptr;
  T* o = out.data_ptr<T>();
  double total = 0, weight_total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t label = t[i];
    double loss = 0, label_weight = 0;
    if (label != ignore_index) {
      STRATA_CHECK(label >= 0 && label < classes, "strata::nll_loss", "target ", label,
                   " (at position ", i, ") is out of range for ", classes,
                   " classes (expected a class in [0, ", classes - 1, "] or ignore_index ",
                   ignore_index, ")");
      label_weight = w != nullptr ? static_cast<double>(w[label]) : 1.0;
      loss = -label_weight * static_cast<double>(x[i * classes + label]);
    }
    if (reduction == kNone) o[i] = static_cast<T>(loss);
    total += loss;
    weight_total += label_weight;
  }
  if (reduction == kNone) return;
  // A mean over no counted target is 0 / 0: NaN, as in PyTorch.
  o[0] = static_cast<T>(reduction == kMean ? total / weight_total : total);
}

// Sum of f(begin, end) over fixed blocks of [0, n), f returning a block's sum.
template <class BlockSum>
double blocked_sum(int64_t n, BlockSum&& block_sum) {
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<double> partial(static_cast<size_t>(blocks));
  parallel_for(0, blocks, std::max<int64_t>(1, kElementwiseGrain / kSumBlock),
               [&](int64_t begin, int64_t end) {
                 for (int64_t b = begin; b < end; ++b) {
                   partial[b] = block_sum(b * kSumBlock, std::min(n, (b + 1) * kSumBlock));
                 }
               });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

// out = (a - b)^2 elementwise, broadcasting a and b to out's shape.
template <class T>
void squared_difference(const Tensor& out, const Tensor& a, const Tensor& b) {
  ElementwiseLayout layout = make_elementwise_layout(out, {&a, &b});
  run_elementwise(
      layout,
      [](void*, char** data, const int64_t* strides, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const T d = *reinterpret_cast<const T*>(data[1] + i * strides[1]) -
                      *reinterpret_cast<const T*>(data[2] + i * strides[2]);
          *reinterpret_cast<T*>(data[0] + i * strides[0]) = d * d;
        }
      },
      nullptr);
}

template <class T>
void mse_loss(const Tensor& out, const Tensor& input, const Tensor& target, int64_t reduction) {
  if (reduction == kNone) {
    squared_difference<T>(out, input, target);
    return;
  }
  using fixed_order::Row;
  double total = 0;
  int64_t count = 0;
  if (input.is_contiguous() && target.is_contiguous() && input.sizes() == target.sizes()) {
    const T* a = input.data_ptr<T>();
    const T* b = target.data_ptr<T>();
    count = input.numel();
    total = blocked_sum(count, [&](int64_t begin, int64_t end) {
      return static_cast<double>(fixed_order::sum_rows<T>(
          end - begin, [](const auto& a_, const auto& b_) { return (a_ - b_).square(); },
          Row<T>(a + begin), Row<T>(b + begin)));
    });
  } else {
    Tensor squares =
        make_empty_tensor(broadcast_shapes(input.sizes(), target.sizes(), "strata::mse_loss"),
                          out.dtype(), out.device(), "strata::mse_loss");
    squared_difference<T>(squares, input, target);
    const T* s = squares.data_ptr<T>();
    count = squares.numel();
    total = blocked_sum(count, [&](int64_t begin, int64_t end) {
      return static_cast<double>(fixed_order::sum_rows<T>(
          end - begin, [](const auto& x) { return x; }, Row<T>(s + begin)));
    });
  }
  // The mean of no elements is NaN, as in PyTorch.
  out.data_ptr<T>()[0] = static_cast<T>(
      reduction == kMean ? (count == 0 ? std::numeric_limits<double>::quiet_NaN() : total / count)
                         : total);
}

}  // namespace

void nll_loss_kernel(const Tensor& out, const Tensor& input, const Tensor& target,
                     const Tensor* weight, int64_t reduction, int64_t ignore_index) {
  STRATA_DISPATCH_FLOATING_TYPES(input.dtype(), "strata::nll_loss", [&] {
    nll_loss<scalar_t>(out, input, target, weight, reduction, ignore_index);
  });
}

void mse_loss_kernel(const Tensor& out, const Tensor& input, const Tensor& target,
                     int64_t reduction) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::mse_loss",
                                 [&] { mse_loss<scalar_t>(out, input, target, reduction); });
}

}  // namespace strata::cpu
