// Reduction kernels: the reducers (what is folded) over the loops of
// reduction_loops.h (how the input is walked).
#include "kernels/cpu/reduction.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fixed_order_fold.h"
#include "kernels/cpu/reduction_loops.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace strata::cpu {
namespace reduction_detail {

namespace {
// Drops a size-1 dim, or merges it into the previous (outer) one when the two
// step through memory as one.
void append_merged(DimVector& sizes, DimVector& strides, int64_t size, int64_t stride) {
  if (size == 1) return;
  if (!sizes.empty() && strides.back() == size * stride) {
    sizes.back() *= size;
    strides.back() = stride;
    return;
  }
  sizes.push_back(size);
  strides.push_back(stride);
}
}  // namespace

ReductionGeometry make_reduction_geometry(const Tensor& self, DimMask reduced,
                                          bool keep_group_order) {
  ReductionGeometry g;
  DimVector group_dims;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const int64_t size = self.sizes()[d];
    if (reduced >> d & 1) {
      group_dims.push_back(d);
      g.group_numel *= size;
    } else {
      append_merged(g.out_sizes, g.out_strides, size, self.strides()[d]);
      g.out_numel *= size;
    }
  }
  if (!keep_group_order) {
    // Broadcast (stride-0) dims outermost, then by decreasing stride.
    auto order_key = [&](int64_t d) {
      const int64_t stride = self.strides()[d];
      return stride == 0 ? std::numeric_limits<int64_t>::max() : std::abs(stride);
    };
    // Insertion sort: stable, and without std::stable_sort's scratch allocation.
    for (size_t i = 1; i < group_dims.size(); ++i) {
      for (size_t j = i; j > 0 && order_key(group_dims[j - 1]) < order_key(group_dims[j]); --j) {
        std::swap(group_dims[j - 1], group_dims[j]);
      }
    }
  }
  for (int64_t d : group_dims) {
    append_merged(g.group_sizes, g.group_strides, self.sizes()[d], self.strides()[d]);
  }
  if (g.group_sizes.empty()) {
    g.group_sizes.push_back(1);
    g.group_strides.push_back(1);
  }
  return g;
}

}  // namespace reduction_detail

namespace {

using reduction_detail::make_reduction_geometry;
using reduction_detail::ReductionGeometry;
using reduction_detail::run_reduction;

template <class T>
using EigenRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T>
constexpr bool kFloating = std::is_floating_point_v<T>;

// Note [Float32 accumulation]
// Sums use blocked summation: each block of kSumBlock values is summed in the
// input dtype, vectorised with two packets of P partial sums (so each adds at
// most kSumBlock / 2P values), and the block sums are accumulated in double.
// Float32 rounding error therefore stays at a few ulps per block instead of
// growing with the row length, at the speed of a float32 loop. (Eigen 3.4 cannot
// vectorise a float-to-double cast, so summing converted values directly would run
// scalar.) Column and strided loops convert each value and accumulate in double
// outright.

// Float32 and Float64 rows are folded by fixed_order::fold (Note [Sums do not
// depend on the address], kernels/cpu/fixed_order_fold.h).
constexpr int64_t kSumBlock = 256;

template <class T, class Term>
double blocked_sum(const T* p, int64_t n, const Term& term) {
  double total = 0;
  for (int64_t i = 0; i < n; i += kSumBlock) {
    const int64_t len = std::min(kSumBlock, n - i);
    total += fixed_order::fold(p + i, len, fixed_order::Add{}, term, {i, n - i - len});
  }
  return total;
}

template <class T, class Out, SumKind kKind>
struct SumReducer {
  using In = T;
  using Acc = std::conditional_t<kFloating<T>, double, int64_t>;
  static constexpr bool kCentered =
      kKind == SumKind::CenteredSquares || kKind == SumKind::CenteredExp;

  Out* out;
  const double* centers = nullptr;  // per output element, for the centered kinds
  int64_t correction = 0;
  bool take_sqrt = false;

  double center(int64_t o) const {
    if constexpr (kCentered) return centers[o];
    return 0;
  }
  Acc identity() const { return 0; }
  Acc combine(Acc a, Acc b) const { return a + b; }
  Acc step(Acc a, T x, int64_t, double c) const {
    if constexpr (kKind == SumKind::Sum || kKind == SumKind::Mean) return a + static_cast<Acc>(x);
    if constexpr (kKind == SumKind::AbsSum) return a + std::abs(static_cast<double>(x));
    if constexpr (kKind == SumKind::SquareSum) return a + static_cast<double>(x) * x;
    if constexpr (kKind == SumKind::CenteredSquares) return a + (x - c) * (x - c);
    if constexpr (kKind == SumKind::CenteredExp) return a + std::exp(x - c);
  }
  Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t first, double c) const {
    if constexpr (!kFloating<T>) {
      for (int64_t k = 0; k < n; ++k) a = step(a, p[k], first + k, c);
      return a;
    } else {
      const T shift = static_cast<T>(c);
      return a + blocked_sum(p, n, [=](const auto& x) {
               if constexpr (kKind == SumKind::Sum || kKind == SumKind::Mean) return x;
               if constexpr (kKind == SumKind::AbsSum) return x.abs();
               if constexpr (kKind == SumKind::SquareSum) return x.square();
               if constexpr (kKind == SumKind::CenteredSquares) return (x - shift).square();
               if constexpr (kKind == SumKind::CenteredExp) return (x - shift).exp();
             });
    }
  }
  void finish(int64_t o, Acc a, int64_t count, double c) const {
    double value = static_cast<double>(a);
    if constexpr (kKind == SumKind::Sum || kKind == SumKind::AbsSum) {
      out[o] = static_cast<Out>(a);
      return;
    }
    if constexpr (kKind == SumKind::Mean) value /= static_cast<double>(count);
    if constexpr (kKind == SumKind::SquareSum) value = std::sqrt(value);
    if constexpr (kKind == SumKind::CenteredSquares) {
      value /= static_cast<double>(std::max<int64_t>(0, count - correction));
      if (take_sqrt) value = std::sqrt(value);
    }
    if constexpr (kKind == SumKind::CenteredExp) value = std::log(value) + c;
    out[o] = static_cast<Out>(value);
  }
};

// Max (or min) of x, or of |x|; NaN wins over every number.
template <class T, class Out, bool kMax, bool kAbs = false>
struct ExtremumReducer {
  using In = T;
  using Acc = T;
  Out* out;

  static double center(int64_t) { return 0; }
  static Acc identity() {
    if constexpr (kAbs) return T(0);
    if constexpr (kFloating<T>) {
      return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    }
    return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  static Acc pick(Acc a, T x) {
    const bool better = kMax ? x > a : x < a;
    if constexpr (kFloating<T>) return better || x != x ? x : a;
    return better ? x : a;
  }
  Acc combine(Acc a, Acc b) const { return pick(a, b); }
  Acc step(Acc a, T x, int64_t, double) const {
    if constexpr (kAbs) return pick(a, std::abs(x));
    return pick(a, x);
  }
  Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t first, double c) const {
    if constexpr (kFloating<T>) {
      if (n == 0) return a;
      const EigenRow<T> row(p, n);
      if constexpr (kAbs) return pick(a, row.abs().template maxCoeff<Eigen::PropagateNaN>());
      if constexpr (kMax) return pick(a, row.template maxCoeff<Eigen::PropagateNaN>());
      return pick(a, row.template minCoeff<Eigen::PropagateNaN>());
    } else {
      for (int64_t k = 0; k < n; ++k) a = step(a, p[k], first + k, c);
      return a;
    }
  }
  void finish(int64_t o, Acc a, int64_t, double) const { out[o] = static_cast<Out>(a); }
};

// Integer products wrap around (computed unsigned, where overflow is defined).
template <class T, class Out>
struct ProdReducer {
  using In = T;
  using Acc = std::conditional_t<kFloating<T>, T, uint64_t>;
  Out* out;

  static double center(int64_t) { return 0; }
  static Acc identity() { return Acc(1); }
  Acc combine(Acc a, Acc b) const { return a * b; }
  Acc step(Acc a, T x, int64_t, double) const { return a * static_cast<Acc>(x); }
  Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t first, double c) const {
    if constexpr (kFloating<T>) {
      if (n == 0) return a;
      return a * fixed_order::fold(p, n, fixed_order::Multiply{}, [](const auto& x) { return x; });
    } else {
      for (int64_t k = 0; k < n; ++k) a = step(a, p[k], first + k, c);
      return a;
    }
  }
  void finish(int64_t o, Acc a, int64_t, double) const { out[o] = static_cast<Out>(a); }
};

// Max (or min) and the position of its first occurrence in the group; the first
// NaN wins over every number.
template <class T, bool kMax>
struct ArgExtremumReducer {
  using In = T;
  struct Acc {
    T value{};
    int64_t index = -1;  // -1: no value seen yet
  };
  T* values;  // null when only the indices are wanted
  int64_t* indices;

  static double center(int64_t) { return 0; }
  static Acc identity() { return {}; }
  // Whether x, which comes after the value held in a, takes its place.
  static bool replaces(T x, const Acc& a) {
    if (a.index < 0) return true;
    if constexpr (kFloating<T>) {
      if (a.value != a.value) return false;
      if (x != x) return true;
    }
    return kMax ? x > a.value : x < a.value;
  }
  Acc step(Acc a, T x, int64_t position, double) const {
    return replaces(x, a) ? Acc{x, position} : a;
  }
  Acc combine(Acc a, Acc b) const { return b.index >= 0 && replaces(b.value, a) ? b : a; }
  Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t first, double c) const {
    if constexpr (kFloating<T>) {
      if (n == 0) return a;
      // The row's extremum, vectorised, then the first place it occurs.
      const EigenRow<T> row(p, n);
      const T best = kMax ? row.template maxCoeff<Eigen::PropagateNaN>()
                          : row.template minCoeff<Eigen::PropagateNaN>();
      int64_t k = 0;
      if (best != best) {
        while (p[k] == p[k]) ++k;
      } else {
        while (p[k] != best) ++k;
      }
      return step(a, best, first + k, c);
    } else {
      for (int64_t k = 0; k < n; ++k) a = step(a, p[k], first + k, c);
      return a;
    }
  }
  void finish(int64_t o, Acc a, int64_t, double) const {
    if (values) values[o] = a.value;
    indices[o] = a.index;
  }
};

template <bool kMax>
void extremum_with_index(const Tensor& values, const Tensor& indices, const Tensor& self,
                         DimMask reduced, const char* op) {
  const ReductionGeometry g = make_reduction_geometry(self, reduced, true);
  STRATA_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    scalar_t* values_data = values.defined() ? values.data_ptr<scalar_t>() : nullptr;
    run_reduction(ArgExtremumReducer<scalar_t, kMax>{values_data, indices.data_ptr<int64_t>()},
                  static_cast<const scalar_t*>(self.data_ptr()), g);
  });
}

// Note [Reducing dims of extent one]
// When every reduced dim has extent 1 (a per-sample bias gradient under vmap sums
// [B, 1, n] over its dim of one) sum, mean, prod, amax and amin leave each element
// as it is: the reduction is a copy into out (converting Bool and Int64 sums to
// Int64), several times faster than a reducer step per output element.
bool copied_as_reduction_of_nothing(const Tensor& out, const Tensor& self, DimMask reduced) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    if ((reduced >> d & 1) && self.sizes()[d] != 1) return false;
  }
  // out with self's shape: the reduced dims of one put back into the contiguous out.
  const Tensor out_as_self(
      make_intrusive<TensorImpl>(out.impl()->storage(), out.dtype(), self.sizes(),
                                 contiguous_strides(self.sizes()), out.storage_offset()));
  copy_kernel(out_as_self, self);
  return true;
}

// Sums of Bool and Int64 are Int64; floating sums keep their dtype.
template <class T>
using sum_out_t = std::conditional_t<kFloating<T>, T, int64_t>;

template <template <class, class> class Reducer>
void run_widening(const Tensor& out, const Tensor& self, DimMask reduced, const char* op) {
  const ReductionGeometry g = make_reduction_geometry(self, reduced, false);
  STRATA_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    using Out = sum_out_t<scalar_t>;
    run_reduction(Reducer<scalar_t, Out>{out.data_ptr<Out>()},
                  static_cast<const scalar_t*>(self.data_ptr()), g);
  });
}

template <class T, class Out>
using PlainSum = SumReducer<T, Out, SumKind::Sum>;

template <bool kMax>
void extremum(const Tensor& out, const Tensor& self, DimMask reduced, const char* op) {
  const ReductionGeometry g = make_reduction_geometry(self, reduced, false);
  STRATA_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    run_reduction(ExtremumReducer<scalar_t, scalar_t, kMax>{out.data_ptr<scalar_t>()},
                  static_cast<const scalar_t*>(self.data_ptr()), g);
  });
}

// Floating-only reductions of one pass, into an output of self's dtype.
template <SumKind kKind>
void floating_sum(const Tensor& out, const Tensor& self, DimMask reduced, const char* op) {
  const ReductionGeometry g = make_reduction_geometry(self, reduced, false);
  STRATA_DISPATCH_FLOATING_TYPES(self.dtype(), op, [&] {
    run_reduction(SumReducer<scalar_t, scalar_t, kKind>{out.data_ptr<scalar_t>()},
                  static_cast<const scalar_t*>(self.data_ptr()), g);
  });
}

}  // namespace

void sum_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  if (copied_as_reduction_of_nothing(out, self, reduced)) return;
  run_widening<PlainSum>(out, self, reduced, "strata::sum");
}

void prod_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  if (copied_as_reduction_of_nothing(out, self, reduced)) return;
  run_widening<ProdReducer>(out, self, reduced, "strata::prod");
}

void mean_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  if (copied_as_reduction_of_nothing(out, self, reduced)) return;
  floating_sum<SumKind::Mean>(out, self, reduced, "strata::mean");
}

void amax_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  if (copied_as_reduction_of_nothing(out, self, reduced)) return;
  extremum<true>(out, self, reduced, "strata::amax");
}

void amin_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  if (copied_as_reduction_of_nothing(out, self, reduced)) return;
  extremum<false>(out, self, reduced, "strata::amin");
}

void max_with_index_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                           DimMask reduced) {
  extremum_with_index<true>(values, indices, self, reduced, "strata::max");
}

void min_with_index_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                           DimMask reduced) {
  extremum_with_index<false>(values, indices, self, reduced, "strata::min");
}

void norm_kernel(const Tensor& out, const Tensor& self, DimMask reduced, NormOrder order) {
  switch (order) {
    case NormOrder::L1: return floating_sum<SumKind::AbsSum>(out, self, reduced, "strata::norm");
    case NormOrder::L2: return floating_sum<SumKind::SquareSum>(out, self, reduced, "strata::norm");
    case NormOrder::Inf: break;
  }
  const ReductionGeometry g = make_reduction_geometry(self, reduced, false);
  STRATA_DISPATCH_FLOATING_TYPES(self.dtype(), "strata::norm", [&] {
    run_reduction(ExtremumReducer<scalar_t, scalar_t, true, true>{out.data_ptr<scalar_t>()},
                  static_cast<const scalar_t*>(self.data_ptr()), g);
  });
}

// Two passes over each group: its center (mean, max) into a double per output
// element, then the centered sum.
void var_kernel(const Tensor& out, const Tensor& self, DimMask reduced, int64_t correction,
                bool take_sqrt) {
  const ReductionGeometry g = make_reduction_geometry(self, reduced, false);
  std::vector<double> means(static_cast<size_t>(g.out_numel));
  STRATA_DISPATCH_FLOATING_TYPES(self.dtype(), "strata::var", [&] {
    const scalar_t* in = static_cast<const scalar_t*>(self.data_ptr());
    run_reduction(SumReducer<scalar_t, double, SumKind::Mean>{means.data()}, in, g);
    run_reduction(
        SumReducer<scalar_t, scalar_t, SumKind::CenteredSquares>{
            out.data_ptr<scalar_t>(), means.data(), correction, take_sqrt},
        in, g);
  });
}

void logsumexp_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  const ReductionGeometry g = make_reduction_geometry(self, reduced, false);
  std::vector<double> shifts(static_cast<size_t>(g.out_numel));
  STRATA_DISPATCH_FLOATING_TYPES(self.dtype(), "strata::logsumexp", [&] {
    const scalar_t* in = static_cast<const scalar_t*>(self.data_ptr());
    run_reduction(ExtremumReducer<scalar_t, double, true>{shifts.data()}, in, g);
    // An infinite or NaN max cannot be subtracted (inf - inf); with no shift the
    // sum itself gives the right inf, -inf (all -inf, or an empty group) or NaN.
    for (double& s : shifts) s = std::isfinite(s) ? s : 0.0;
    run_reduction(SumReducer<scalar_t, scalar_t, SumKind::CenteredExp>{out.data_ptr<scalar_t>(),
                                                                       shifts.data()},
                  in, g);
  });
}

}  // namespace strata::cpu
