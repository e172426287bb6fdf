#include "kernels/cpu/scan_sort.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Whether a goes before b: NaN counts as larger than every number.
template <class T>
bool ascending_before(T a, T b) {
  return (a < b) || (!is_nan(a) && is_nan(b));
}

}  // namespace

void cumsum_kernel(const Tensor& out, const Tensor& input, Lanes lanes) {
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::cumsum", [&] {
    const scalar_t* in = input.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t outer = 0; outer < lanes.outer; ++outer) {
      const int64_t base = outer * lanes.size * lanes.inner;
      // Lane by lane would stride by `inner`; row by row keeps the reads contiguous.
      for (int64_t k = 0; k < lanes.size; ++k) {
        const int64_t row = base + k * lanes.inner;
        for (int64_t i = 0; i < lanes.inner; ++i) {
          o[row + i] = k == 0 ? in[row + i] : scalar_t(o[row - lanes.inner + i] + in[row + i]);
        }
      }
    }
  });
}

void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& input, Lanes lanes,
                 bool descending) {
  STRATA_DISPATCH_ALL_TYPES(input.dtype(), "strata::sort", [&] {
    const scalar_t* in = input.data_ptr<scalar_t>();
    scalar_t* v = values.data_ptr<scalar_t>();
    int64_t* idx = indices.data_ptr<int64_t>();
    const int64_t n = lanes.size;
    parallel_for(0, lanes.outer * lanes.inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)),
                 [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t lane = begin; lane < end; ++lane) {
        const int64_t start = (lane / lanes.inner) * n * lanes.inner + lane % lanes.inner;
        auto at = [&](int64_t k) { return in[start + k * lanes.inner]; };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return descending ? ascending_before(at(b), at(a)) : ascending_before(at(a), at(b));
        });
        for (int64_t k = 0; k < n; ++k) {
          v[start + k * lanes.inner] = at(order[static_cast<size_t>(k)]);
          idx[start + k * lanes.inner] = order[static_cast<size_t>(k)];
        }
      }
    });
  });
}

}  // namespace strata::cpu
