// A row's mean and reciprocal standard deviation, for the normalisations
// (layer_norm, group_norm), folded in a fixed order (Note [Sums do not depend
// on the address], kernels/cpu/fixed_order_fold.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cpu/fixed_order_fold.h"

namespace strata::cpu {

// The mean of the n > 0 values of a row.
template <class T>
T mean_of(const fixed_order::Row<T>& row, int64_t n) {
  return fixed_order::sum_rows<T>(
             n, [](const auto& x) { return x; }, row) /
         static_cast<T>(n);
}

template <class T>
struct RowStatistics {
  T mean, rstd;  // rstd = 1 / sqrt(variance + eps)
};

// Two passes (the mean, then the squares of the centred values): no cancellation.
template <class T>
RowStatistics<T> row_statistics(const fixed_order::Row<T>& row, int64_t n, double eps) {
  const T mean = mean_of(row, n);
  const T variance = fixed_order::sum_rows<T>(
                         n, [&](const auto& x) { return (x - mean).square(); }, row) /
                     static_cast<T>(n);
  return {mean, T(1) / std::sqrt(variance + static_cast<T>(eps))};
}

}  // namespace strata::cpu
