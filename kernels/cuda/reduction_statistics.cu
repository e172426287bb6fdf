// logsumexp, var/std and norm on CUDA (kernels/cuda/reduction.h): reducers on the
// shared tree (Note [CUDA reduction tree]), the centered ones in two passes as on
// the CPU, so both backends are stable alike (no sum of squares minus a squared
// mean, no exp of an unshifted value).
#include <cstdint>

#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/reduction.cuh"
#include "kernels/cuda/reduction.h"
#include "kernels/cuda/runtime.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

// The max of a group as logsumexp's shift: an infinite or NaN max cannot be
// subtracted (inf - inf), and with no shift the sum itself gives the right inf,
// -inf (all -inf, or an empty group) or NaN.
template <class T>
struct ShiftReducer : ExtremumReducer<T, double, true> {
  __device__ void finish(int64_t o, T a, int64_t) const {
    this->out[o] = isfinite(static_cast<double>(a)) ? static_cast<double>(a) : 0.0;
  }
};

void check_devices(const char* op, const Tensor& out, const Tensor& self) {
  check_same_device(op, out.device(), self.device());
}

}  // namespace

void logsumexp_kernel(const Tensor& out, const Tensor& self, DimMask reduced) {
  constexpr const char* op = "strata::logsumexp";
  check_devices(op, out, self);
  const Tensor shifts = centers_for(out.numel(), out.device(), op);
  dispatch_floating(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    run_reduction(op, ShiftReducer<T>{{{}, data_of<double>(shifts)}}, self, reduced, out.numel());
    SumReducer<T, double, T, SumKind::CenteredExp> r{{}, data_of<T>(out)};
    r.centers = data_of<double>(shifts);
    run_reduction(op, r, self, reduced, out.numel());
  });
}

void var_kernel(const Tensor& out, const Tensor& self, DimMask reduced, int64_t correction,
                bool take_sqrt) {
  const char* op = take_sqrt ? "strata::std" : "strata::var";
  check_devices(op, out, self);
  const Tensor means = centers_for(out.numel(), out.device(), op);
  dispatch_floating(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    run_reduction(op, SumReducer<T, double, double, SumKind::Mean>{{}, data_of<double>(means)},
                  self, reduced, out.numel());
    SumReducer<T, double, T, SumKind::CenteredSquares> r{{}, data_of<T>(out)};
    r.centers = data_of<double>(means);
    r.correction = correction;
    r.take_sqrt = take_sqrt;
    run_reduction(op, r, self, reduced, out.numel());
  });
}

void norm_kernel(const Tensor& out, const Tensor& self, DimMask reduced, cpu::NormOrder order) {
  constexpr const char* op = "strata::norm";
  check_devices(op, out, self);
  dispatch_floating(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    T* result = data_of<T>(out);
    switch (order) {
      case cpu::NormOrder::L1:
        return run_reduction(op, SumReducer<T, double, T, SumKind::AbsSum>{{}, result}, self,
                             reduced, out.numel());
      case cpu::NormOrder::L2:
        return run_reduction(op, SumReducer<T, double, T, SumKind::SquareSum>{{}, result}, self,
                             reduced, out.numel());
      case cpu::NormOrder::Inf:
        return run_reduction(op, ExtremumReducer<T, T, true, true>{{}, result}, self, reduced,
                             out.numel());
    }
  });
}

}  // namespace strata::gpu
