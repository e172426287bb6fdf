// Derivative formulas (Note [Derivative formulas]) of the reductions in
// reduction.cpp. sum() and mean() over every dim are composites of the dim-list
// overloads; argmax and argmin have integer outputs only and need none.
#include <algorithm>
#include <optional>
#include <vector>

#include "dispatcher/library.h"
#include "ops/ops.h"
#include "transforms/grad/derivative.h"

namespace strata {
namespace {

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;

// The dims a reduction folded. A reduced tensor (the result, or its gradient)
// broadcasts against the input once restore() has put the folded dims back as
// size 1.
class Folded {
 public:
  // `dims` as the op took them: empty means every dim.
  Folded(IntArrayRef input_sizes, IntArrayRef dims, bool keepdim) : keepdim_(keepdim) {
    const int64_t rank = static_cast<int64_t>(input_sizes.size());
    // A 0-dim input accepts dim 0 or -1 but has no dim to put back.
    if (rank > 0) {
      for (int64_t d : dims) dims_.push_back(wrap_dim(d, rank, "strata::autograd"));
      if (dims.empty()) {
        for (int64_t d = 0; d < rank; ++d) dims_.push_back(d);
      }
    }
    std::sort(dims_.begin(), dims_.end());
    for (int64_t d : dims_) group_numel_ *= input_sizes[static_cast<size_t>(d)];
  }

  Tensor restore(const Tensor& reduced) const {
    if (keepdim_) return reduced;
    Tensor t = reduced;
    for (int64_t d : dims_) t = t.unsqueeze(d);  // ascending, so each d is final
    return t;
  }

  // The folded dims, wrapped and sorted (empty for a 0-dim input, i.e. every dim).
  IntArrayRef dims() const { return dims_; }
  // Input elements per result element.
  int64_t group_numel() const { return group_numel_; }

 private:
  std::vector<int64_t> dims_;
  bool keepdim_;
  int64_t group_numel_ = 1;
};

// Ops whose tensor argument 0 is followed by `int[] dim, bool keepdim`.
Folded folded_dim_list(const BackwardContext& c) {
  return Folded(c.input_sizes(0), c.int_list_arg(1), c.bool_arg(2));
}

// Ops over every dim, without a dim argument.
Folded folded_all(const BackwardContext& c) { return Folded(c.input_sizes(0), {}, false); }

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

void prod_backward(BackwardContext& c) {
  c.set_grad(0, c.grad() * prod_derivative(c.input(0), std::nullopt));
}

void prod_dim_backward(BackwardContext& c) {
  const int64_t dim = c.int_arg(1);
  const Folded f(c.input_sizes(0), {dim}, c.bool_arg(2));
  c.set_grad(0, f.restore(c.grad()) * prod_derivative(c.input(0), dim));
}

// The gradient of a max or min is split evenly among the elements of the group
// that attain it (`attained` is the reduced value).
Tensor split_among_ties(const Tensor& grad, const Tensor& x, const Tensor& attained,
                        const Folded& f) {
  Tensor ties = x == f.restore(attained);
  return f.restore(grad) * ties / ties.sum(f.dims(), true);
}

void extremum_backward(BackwardContext& c) {
  c.set_grad(0, split_among_ties(c.grad(), c.input(0), c.output(), folded_dim_list(c)));
}

void extremum_all_backward(BackwardContext& c) {
  c.set_grad(0, split_among_ties(c.grad(), c.input(0), c.output(), folded_all(c)));
}

// max.dim and min.dim: the whole gradient goes to the element the index output
// names.
void extremum_dim_backward(BackwardContext& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (rank == 0) {
    c.set_grad(0, c.grad());
    return;
  }
  const int64_t dim = wrap_dim(c.int_arg(1), rank, "strata::autograd");
  const Folded f(sizes, {dim}, c.bool_arg(2));
  // Positions along `dim`, shaped to broadcast against the input.
  std::vector<int64_t> column(static_cast<size_t>(rank - dim), 1);
  column[0] = sizes[static_cast<size_t>(dim)];
  Tensor positions = arange(column[0], kInt64).view(column);
  c.set_grad(0, f.restore(c.grad(0)) * (positions == f.restore(c.output(1))));
}

void logsumexp_backward(BackwardContext& c) {
  const Folded f = folded_dim_list(c);
  c.set_grad(0, f.restore(c.grad()) * (c.input(0) - f.restore(c.output())).exp());
}

// var = sum((x - mean)^2) / dof with dof = group size - correction, so
// d var / dx = 2 (x - mean) / dof and d std / dx = (x - mean) / (dof * std).
// A constant group (std 0) is a kink of std; it gets 0, the symmetric limit.
template <bool kStd>
void var_backward(BackwardContext& c) {
  const Tensor& x = c.input(0);
  const IntArrayRef dims = c.int_list_arg(1);
  const Folded f(c.input_sizes(0), dims, c.bool_arg(3));
  const double dof = static_cast<double>(std::max<int64_t>(0, f.group_numel() - c.int_arg(2)));
  Tensor grad = f.restore(c.grad());
  Tensor centered = x - x.mean(dims, true);
  if (!kStd) {
    c.set_grad(0, grad * centered * (2.0 / dof));
    return;
  }
  Tensor std = f.restore(c.output());
  Tensor nonzero = std != 0.0;
  Tensor safe_std = where(nonzero, std, ones_like(std));
  c.set_grad(0, grad * centered / (safe_std * dof) * nonzero);
}

// p = 1: sign(x). p = 2: x / norm, 0 where the norm is 0 (its kink; the
// symmetric limit). p = inf: the max of |x|, split among ties, times sign(x).
void norm_backward(BackwardContext& c) {
  const Tensor& x = c.input(0);
  const double p = c.scalar_arg(1).to<double>();
  const Folded f(c.input_sizes(0), c.int_list_arg(2), c.bool_arg(3));
  if (p == 1.0) {
    c.set_grad(0, f.restore(c.grad()) * x.sign());
  } else if (p == 2.0) {
    Tensor norm = f.restore(c.output());
    Tensor nonzero = norm != 0.0;
    c.set_grad(0, f.restore(c.grad()) * x / where(nonzero, norm, ones_like(norm)) * nonzero);
  } else {
    c.set_grad(0, split_among_ties(c.grad(), x.abs(), c.output(), f) * x.sign());
  }
}

constexpr uint32_t kSelf = args(0);
constexpr uint32_t kResult = args(0);

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("sum.dim_IntList", derivative({.backward = &sum_backward}));
  m.impl("mean.dim", derivative({.backward = &mean_backward}));
  m.impl("prod", derivative({.backward = &prod_backward, .saved_inputs = kSelf}));
  m.impl("prod.dim_int", derivative({.backward = &prod_dim_backward, .saved_inputs = kSelf}));
  const KernelFunction extremum =
      derivative({.backward = &extremum_backward, .saved_inputs = kSelf, .saved_outputs = kResult});
  const KernelFunction extremum_all = derivative(
      {.backward = &extremum_all_backward, .saved_inputs = kSelf, .saved_outputs = kResult});
  const KernelFunction extremum_dim =
      derivative({.backward = &extremum_dim_backward, .saved_outputs = args(1)});
  m.impl("amax", extremum);
  m.impl("amin", extremum);
  m.impl("max", extremum_all);
  m.impl("min", extremum_all);
  m.impl("max.dim", extremum_dim);
  m.impl("min.dim", extremum_dim);
  m.impl("logsumexp",
         derivative(
             {.backward = &logsumexp_backward, .saved_inputs = kSelf, .saved_outputs = kResult}));
  m.impl("var.correction", derivative({.backward = &var_backward<false>, .saved_inputs = kSelf}));
  m.impl("std.correction",
         derivative(
             {.backward = &var_backward<true>, .saved_inputs = kSelf, .saved_outputs = kResult}));
  m.impl("norm",
         derivative({.backward = &norm_backward, .saved_inputs = kSelf, .saved_outputs = kResult}));
}

}  // namespace
}  // namespace strata
