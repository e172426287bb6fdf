// Sums, means and products over any set of dims with keepdim (ops/reduction_common.h
// has what every reduction shares).
#include <optional>

#include "dispatcher/op_def.h"
#include "kernels/cuda/reduction.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "ops/reduction_common.h"

namespace strata::reduction {
namespace {

constexpr char kSum[] = "strata::sum";
constexpr char kMean[] = "strata::mean";
constexpr char kProd[] = "strata::prod";

// Sums and products of Bool and Int64 tensors are Int64.
ScalarType widened_dtype(ScalarType dtype) { return is_floating_point(dtype) ? dtype : kInt64; }

Reduction plan_sum(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return plan_reduction(self, dim, keepdim, widened_dtype(self.dtype()), kSum);
}

Tensor sum_dim_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return reduce(self, plan_sum(self, dim, keepdim), kSum, &cpu::sum_kernel);
}

Tensor sum_dim_cuda(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return reduce(self, plan_sum(self, dim, keepdim), kSum, &gpu::sum_kernel);
}

Tensor sum_composite(const Tensor& self) { return self.sum({}, false); }

Reduction plan_mean(const Tensor& self, IntArrayRef dim, bool keepdim) {
  check_floating(self, kMean);
  return plan_reduction(self, dim, keepdim, self.dtype(), kMean);
}

Tensor mean_dim_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return reduce(self, plan_mean(self, dim, keepdim), kMean, &cpu::mean_kernel);
}

Tensor mean_dim_cuda(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return reduce(self, plan_mean(self, dim, keepdim), kMean, &gpu::mean_kernel);
}

Tensor mean_composite(const Tensor& self) { return self.mean({}, false); }

Reduction plan_prod_all(const Tensor& self) {
  return plan_reduction(self, {}, false, widened_dtype(self.dtype()), kProd);
}

Reduction plan_prod_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return plan_reduction(self, {dim}, keepdim, widened_dtype(self.dtype()), kProd);
}

Tensor prod_cpu(const Tensor& self) {
  return reduce(self, plan_prod_all(self), kProd, &cpu::prod_kernel);
}

Tensor prod_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return reduce(self, plan_prod_dim(self, dim, keepdim), kProd, &cpu::prod_kernel);
}

Tensor prod_cuda(const Tensor& self) {
  return reduce(self, plan_prod_all(self), kProd, &gpu::prod_kernel);
}

Tensor prod_dim_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  return reduce(self, plan_prod_dim(self, dim, keepdim), kProd, &gpu::prod_kernel);
}

// ---- derivatives (Note [Derivative formulas]) ----

using autograd::BackwardContext;

// Every element of a group receives the group's gradient. sum_to reduces every
// broadcast gradient with this op, so higher orders run through this formula
// everywhere: it stays views (unsqueeze, expand).
void sum_backward(BackwardContext& c) {
  c.set_grad(0, folded_dim_list(c).restore(c.grad()).expand(c.input_sizes(0)));
}

void mean_backward(BackwardContext& c) {
  const Folded f = folded_dim_list(c);
  const double n = static_cast<double>(f.group_numel());
  c.set_grad(0, f.restore(c.grad() / n).expand(c.input_sizes(0)));
}

// d prod / d x_i is the product of the other elements of x_i's group: prod / x_i
// when the group has no zero. Splitting the group into its nonzero elements
// (product P) and its zeros (product Z) never divides by zero: a nonzero x_i gets
// P / x_i * Z, and a zero gets P times the product of the other zeros (1 for an
// only zero, else 0). The values are exact for any number of zeros; so are the
// second derivatives up to one zero per group, Z carrying the dependence of the
// other elements' gradients on that zero (with several zeros, the gradients of
// zeros miss their dependence on each other).
Tensor prod_derivative(const Tensor& x, const std::optional<int64_t>& dim) {
  auto group_prod = [&](const Tensor& t) { return dim ? t.prod(*dim, true) : t.prod(); };
  Tensor zero = x == 0.0;
  Tensor ones = ones_like(x);
  Tensor nonzero = where(zero, ones, x);
  Tensor nonzero_prod = group_prod(nonzero);
  Tensor only_zero = (dim ? zero.sum({*dim}, true) : zero.sum()) == 1;
  return where(zero, nonzero_prod * only_zero,
               nonzero_prod / nonzero * group_prod(where(zero, x, ones)));
}

struct Prod {
  template <class C>
  static Folded folded(const C& c) {
    return folded_all(c);
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded&) {
    return prod_derivative(c.input(0), std::nullopt);
  }
};

struct ProdDim {
  template <class C>
  static Folded folded(const C& c) {
    return folded_one_dim(c);
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded&) {
    return prod_derivative(c.input(0), c.int_arg(1));
  }
};

// ---- the rows (Note [One op, one place]) ----

// sum() and mean() are the dim-list overloads over every dim, so only those have
// derivative formulas and batching rules.
const OpFamily kSumOps("reduction_sum", {
    {.schema = "sum(Tensor self) -> Tensor", .decomposition = &sum_composite},
    {.schema = "sum.dim_IntList(Tensor self, int[] dim, bool keepdim=False) -> Tensor",
     .cpu = &sum_dim_cpu,
     .cuda = &sum_dim_cuda,
     .derivative =
         autograd::derivative({.backward = &sum_backward, .forward = &autograd::linear_forward}),
     .batching = kRule<static_cast<DimListMethod>(&Tensor::sum), kSum>,
     .shape = &planned_shape<&plan_sum>,
     .flops = kOnePerInputElement},
    {.schema = "mean(Tensor self) -> Tensor", .decomposition = &mean_composite},
    {.schema = "mean.dim(Tensor self, int[] dim, bool keepdim=False) -> Tensor",
     .cpu = &mean_dim_cpu,
     .cuda = &mean_dim_cuda,
     .derivative =
         autograd::derivative({.backward = &mean_backward, .forward = &autograd::linear_forward}),
     .batching = kRule<static_cast<DimListMethod>(&Tensor::mean), kMean>,
     .shape = &planned_shape<&plan_mean>,
     .flops = kOnePerInputElement},
    {.schema = "prod(Tensor self) -> Tensor",
     .cpu = &prod_cpu,
     .cuda = &prod_cuda,
     .derivative = reduction_derivative<Prod>(kSelf, 0),
     .batching = &EveryDimRule<static_cast<AllMethod>(&Tensor::prod),
                               static_cast<DimMethod>(&Tensor::prod), kProd>::call,
     .shape = &planned_shape<&plan_prod_all>,
     .flops = kOnePerInputElement},
    {.schema = "prod.dim_int(Tensor self, int dim, bool keepdim=False) -> Tensor",
     .cpu = &prod_dim_cpu,
     .cuda = &prod_dim_cuda,
     .derivative = reduction_derivative<ProdDim>(kSelf, 0),
     .batching = kRule<static_cast<DimMethod>(&Tensor::prod), kProd>,
     .shape = &planned_shape<&plan_prod_dim>,
     .flops = kOnePerInputElement},
});

}  // namespace
}  // namespace strata::reduction

namespace strata {
namespace {

using UnarySig = Tensor(const Tensor&);
using DimListSig = Tensor(const Tensor&, IntArrayRef, bool);

}  // namespace

Tensor Tensor::sum() const { return STRATA_OP("strata::sum", "", UnarySig).call(*this); }

Tensor Tensor::sum(IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::sum", "dim_IntList", DimListSig).call(*this, dim, keepdim);
}

Tensor Tensor::mean() const { return STRATA_OP("strata::mean", "", UnarySig).call(*this); }

Tensor Tensor::mean(IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::mean", "dim", DimListSig).call(*this, dim, keepdim);
}

Tensor Tensor::prod() const { return STRATA_OP("strata::prod", "", UnarySig).call(*this); }

Tensor Tensor::prod(int64_t dim, bool keepdim) const {
  return STRATA_OP("strata::prod", "dim_int", Tensor(const Tensor&, int64_t, bool))
      .call(*this, dim, keepdim);
}

}  // namespace strata
