#include "kernels/cpu/creation.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/parallel.h"
#include "kernels/scalar_cast.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// out[i] = value_at(i) over a contiguous output, in parallel above the grain.
template <class T, class ValueAt>
void fill_by_index(const Tensor& out, ValueAt value_at) {
  T* data = out.data_ptr<T>();
  parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) data[i] = value_at(i);
  });
}

}  // namespace

void arange_kernel(const Tensor& out, const Scalar& start, const Scalar& step) {
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::arange", [&] {
    if constexpr (std::is_same_v<scalar_t, int64_t>) {
      if (!start.is_floating_point() && !step.is_floating_point()) {
        const int64_t first = start.to_int(), by = step.to_int();
        // Every value lies between start and end, but i * by alone can pass int64
        // (start INT64_MIN, step 2^62): computed unsigned, where it wraps back.
        fill_by_index<int64_t>(out, [first, by](int64_t i) {
          return static_cast<int64_t>(static_cast<uint64_t>(first) +
                                      static_cast<uint64_t>(i) * static_cast<uint64_t>(by));
        });
        return;
      }
    }
    // Each value from its index, never by accumulation: no drift along the range.
    const double first = start.to_double(), by = step.to_double();
    if constexpr (std::is_integral_v<scalar_t> && !std::is_same_v<scalar_t, bool>) {
      // The values lie between the first and the last: both in range keep the casts defined.
      const double last = first + static_cast<double>(out.numel() - 1) * by;
      const bool fits =
          has_integer_equivalent<int64_t>(first) && has_integer_equivalent<int64_t>(last);
      STRATA_CHECK(out.numel() == 0 || fits, "strata::arange", "the range from ", first, " by ", by,
                   " has values out of range for a ", out.dtype(), " result");
    }
    fill_by_index<scalar_t>(out, [first, by](int64_t i) {
      return static_cast<scalar_t>(first + static_cast<double>(i) * by);
    });
  });
}

void linspace_kernel(const Tensor& out, const Scalar& start, const Scalar& end) {
  const int64_t steps = out.numel();
  const double first = start.to_double(), last = end.to_double();
  const double step = steps > 1 ? (last - first) / static_cast<double>(steps - 1) : 0.0;
  // The first half counts up from start and the second half down from end, so
  // both endpoints come out exact (a single step gives start).
  const int64_t half = (steps + 1) / 2;
  // Every value lies between the ends: ends an integer holds keep the casts defined.
  const auto fits = [](double v) { return v >= -0x1p63 && v < 0x1p63; };
  STRATA_CHECK(is_floating_point(out.dtype()) || (fits(first) && fits(last)), "strata::linspace",
               "start ", first, " and end ", last, " must be finite and in range for a ", out.dtype(),
               " result");
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::linspace", [&] {
    fill_by_index<scalar_t>(out, [=](int64_t i) {
      const double value = i < half ? first + static_cast<double>(i) * step
                                    : last - static_cast<double>(steps - 1 - i) * step;
      return static_cast<scalar_t>(value);
    });
  });
}

void eye_kernel(const Tensor& out) {
  const int64_t rows = out.sizes()[0], cols = out.sizes()[1];
  if (out.numel() == 0) return;
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::eye", [&] {
    scalar_t* data = out.data_ptr<scalar_t>();
    std::memset(static_cast<void*>(data), 0, static_cast<size_t>(out.numel()) * sizeof(scalar_t));
    const int64_t diagonal = std::min(rows, cols);
    for (int64_t i = 0; i < diagonal; ++i) data[i * cols + i] = scalar_t(1);
  });
}

}  // namespace strata::cpu
