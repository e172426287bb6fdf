// logsumexp, var/std and norm: reductions of floating-point inputs whose value is
// a nonlinear function of the whole group (ops/reduction_common.h has what every
// reduction shares).
#include <algorithm>
#include <cmath>

#include "dispatcher/op_def.h"
#include "kernels/cuda/reduction.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "ops/reduction_common.h"
#include "tensor/error.h"

namespace strata::reduction {
namespace {

constexpr char kLogsumexp[] = "strata::logsumexp";
constexpr char kVar[] = "strata::var";
constexpr char kStd[] = "strata::std";
constexpr char kNorm[] = "strata::norm";

Reduction plan_logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  check_floating(self, kLogsumexp);
  return plan_reduction(self, dim, keepdim, self.dtype(), kLogsumexp);
}

// The row's kernels, one instance per backend's kernel (cpu:: or gpu::).
using StatisticKernel = void (*)(const Tensor&, const Tensor&, DimMask);
using VarKernel = void (*)(const Tensor&, const Tensor&, DimMask, int64_t, bool);
using NormKernel = void (*)(const Tensor&, const Tensor&, DimMask, cpu::NormOrder);

template <StatisticKernel kKernel>
Tensor logsumexp_on(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return reduce(self, plan_logsumexp(self, dim, keepdim), kLogsumexp, kKernel);
}

template <bool kSqrt>
Reduction plan_var(const Tensor& self, IntArrayRef dim, int64_t correction, bool keepdim) {
  const char* op = kSqrt ? kStd : kVar;
  check_floating(self, op);
  STRATA_CHECK(correction >= 0, op, "correction must be non-negative, got ", correction);
  return plan_reduction(self, dim, keepdim, self.dtype(), op);
}

template <VarKernel kKernel, bool kSqrt>
Tensor var_on(const Tensor& self, IntArrayRef dim, int64_t correction, bool keepdim) {
  return reduce(self, plan_var<kSqrt>(self, dim, correction, keepdim), kSqrt ? kStd : kVar,
                [&](const Tensor& out, const Tensor& in, DimMask m) {
                  kKernel(out, in, m, correction, kSqrt);
                });
}

cpu::NormOrder norm_order(const Scalar& p) {
  const double order = p.to<double>();
  if (order == 1) return cpu::NormOrder::L1;
  if (order == 2) return cpu::NormOrder::L2;
  STRATA_CHECK(std::isinf(order) && order > 0, kNorm, "unsupported p=", p,
               ": the supported norms are p=1, p=2 and p=inf");
  return cpu::NormOrder::Inf;
}

Reduction plan_norm(const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim) {
  check_floating(self, kNorm);
  const cpu::NormOrder order = norm_order(p);
  const Reduction r = plan_reduction(self, dim, keepdim, self.dtype(), kNorm);
  if (order == cpu::NormOrder::Inf) check_nonempty_groups(self, r, dim, kNorm);
  return r;
}

template <NormKernel kKernel>
Tensor norm_on(const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim) {
  const Reduction r = plan_norm(self, p, dim, keepdim);
  return reduce(self, r, kNorm,
                [order = norm_order(p)](const Tensor& out, const Tensor& in, DimMask m) {
                  kKernel(out, in, m, order);
                });
}

// ---- derivatives (Note [Derivative formulas]) ----

struct Logsumexp {
  template <class C>
  static Folded folded(const C& c) {
    return folded_dim_list(c);
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded& f) {
    return (c.input(0) - f.restore(c.output())).exp();
  }
};

// var = sum((x - mean)^2) / dof with dof = group size - correction, so
// d var / dx = 2 (x - mean) / dof and d std / dx = (x - mean) / (dof * std).
// A constant group (std 0) is a kink of std; it gets 0, the symmetric limit.
template <bool kSqrt>
struct Var {
  template <class C>
  static Folded folded(const C& c) {
    return Folded(input_sizes(c), c.int_list_arg(1), c.bool_arg(3));
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded& f) {
    const Tensor& x = c.input(0);
    const double dof = static_cast<double>(std::max<int64_t>(0, f.group_numel() - c.int_arg(2)));
    Tensor centered = x - x.mean(c.int_list_arg(1), true);
    if (!kSqrt) return centered * (2.0 / dof);
    Tensor std = f.restore(c.output());
    Tensor nonzero = std != 0.0;
    return centered / (where(nonzero, std, ones_like(std)) * dof) * nonzero;
  }
};

// p = 1: sign(x). p = 2: x / norm, 0 where the norm is 0 (its kink; the
// symmetric limit). p = inf: the max of |x|, split among ties, times sign(x).
struct Norm {
  template <class C>
  static Folded folded(const C& c) {
    return Folded(input_sizes(c), c.int_list_arg(2), c.bool_arg(3));
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded& f) {
    const Tensor& x = c.input(0);
    const double p = c.scalar_arg(1).template to<double>();
    if (p == 1.0) return x.sign();
    if (p == 2.0) {
      Tensor norm = f.restore(c.output());
      Tensor nonzero = norm != 0.0;
      return x / where(nonzero, norm, ones_like(norm)) * nonzero;
    }
    return tie_weights(x.abs(), c.output(), f) * x.sign();
  }
};

// ---- the rows (Note [One op, one place]) ----

// FLOPs per input element; the work per output element (a log, a division, a
// square root) is left out.
//  - logsumexp: the group's max (a comparison), then a subtraction, an exp and an add;
//  - var and std: the mean (an add), then a subtraction, a square and an add;
//  - norm: |x| (or x * x) and an add, or a comparison for p = inf.
constexpr FlopFn kLogsumexpFlops = &per_input_element<4>;
constexpr FlopFn kVarFlops = &per_input_element<4>;
constexpr FlopFn kNormFlops = &per_input_element<2>;

const OpFamily kStatisticsOps("reduction_statistics", {
    {.schema = "logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor",
     .cpu = &logsumexp_on<&cpu::logsumexp_kernel>,
     .cuda = &logsumexp_on<&gpu::logsumexp_kernel>,
     .derivative = reduction_derivative<Logsumexp>(kSelf, kResult),
     .batching = kRule<&Tensor::logsumexp, kLogsumexp>,
     .shape = &planned_shape<&plan_logsumexp>,
     .flops = kLogsumexpFlops},
    {.schema = "var.correction(Tensor self, int[] dim=[], int correction=1, bool keepdim=False)"
               " -> Tensor",
     .cpu = &var_on<&cpu::var_kernel, false>,
     .cuda = &var_on<&gpu::var_kernel, false>,
     .derivative = reduction_derivative<Var<false>>(kSelf, 0),
     .batching = kRule<&Tensor::var, kVar, 0, 2>,
     .shape = &planned_shape<&plan_var<false>>,
     .flops = kVarFlops},
    {.schema = "std.correction(Tensor self, int[] dim=[], int correction=1, bool keepdim=False)"
               " -> Tensor",
     .cpu = &var_on<&cpu::var_kernel, true>,
     .cuda = &var_on<&gpu::var_kernel, true>,
     .derivative = reduction_derivative<Var<true>>(kSelf, kResult),
     .batching = kRule<&Tensor::std, kStd, 0, 2>,
     .shape = &planned_shape<&plan_var<true>>,
     .flops = kVarFlops},
    {.schema = "norm(Tensor self, Scalar p=2, int[] dim=[], bool keepdim=False) -> Tensor",
     .cpu = &norm_on<&cpu::norm_kernel>,
     .cuda = &norm_on<&gpu::norm_kernel>,
     .derivative = reduction_derivative<Norm>(kSelf, kResult),
     .batching = kRule<&Tensor::norm, kNorm, 1, 2>,
     .shape = &planned_shape<&plan_norm>,
     .flops = kNormFlops},
});

}  // namespace
}  // namespace strata::reduction

namespace strata {
namespace {

using DimListSig = Tensor(const Tensor&, IntArrayRef, bool);
using VarSig = Tensor(const Tensor&, IntArrayRef, int64_t, bool);

}  // namespace

Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::logsumexp", "", DimListSig).call(*this, dim, keepdim);
}

Tensor Tensor::var(IntArrayRef dim, int64_t correction, bool keepdim) const {
  return STRATA_OP("strata::var", "correction", VarSig).call(*this, dim, correction, keepdim);
}

Tensor Tensor::std(IntArrayRef dim, int64_t correction, bool keepdim) const {
  return STRATA_OP("strata::std", "correction", VarSig).call(*this, dim, correction, keepdim);
}

Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::norm", "", Tensor(const Tensor&, const Scalar&, IntArrayRef, bool))
      .call(*this, p, dim, keepdim);
}

}  // namespace strata
