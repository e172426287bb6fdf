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
using autograd::ForwardContext;

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

  // The sum over each group of t, shaped like the reduction's result.
  Tensor reduce(const Tensor& t) const { return t.sum(dims_, keepdim_); }

  // The folded dims, wrapped and sorted (empty for a 0-dim input, i.e. every dim).
  IntArrayRef dims() const { return dims_; }
  // Input elements per result element.
  int64_t group_numel() const { return group_numel_; }

 private:
  std::vector<int64_t> dims_;
  bool keepdim_;
  int64_t group_numel_ = 1;
};

IntArrayRef input_sizes(const BackwardContext& c) { return c.input_sizes(0); }
IntArrayRef input_sizes(const ForwardContext& c) { return c.input(0).sizes(); }

// Ops whose tensor argument 0 is followed by `int[] dim, bool keepdim`.
template <class Context>
Folded folded_dim_list(const Context& c) {
  return Folded(input_sizes(c), c.int_list_arg(1), c.bool_arg(2));
}

// Ops over every dim, without a dim argument.
template <class Context>
Folded folded_all(const Context& c) {
  return Folded(input_sizes(c), {}, false);
}

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

// The other reductions have a local derivative d out / d x shaped like the input
// (Op::derivative, from the op's arguments and result as either context holds
// them): the gradient is the result's gradient put back over each group times
// it, and the tangent the sum over each group of the input's tangent times it.
template <class Op>
void reduction_backward(BackwardContext& c) {
  const Folded f = Op::folded(c);
  c.set_grad(0, f.restore(c.grad()) * Op::derivative(c, f));
}

template <class Op>
void reduction_forward(ForwardContext& c) {
  const Folded f = Op::folded(c);
  c.set_tangent(0, f.reduce(c.tangent(0) * Op::derivative(c, f)));
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
    return Folded(input_sizes(c), {c.int_arg(1)}, c.bool_arg(2));
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded&) {
    return prod_derivative(c.input(0), c.int_arg(1));
  }
};

// A max or min is split evenly among the elements of the group that attain it
// (`attained` is the reduced value): each gets the gradient divided by their
// number, and the tangent is the mean of their tangents.
Tensor tie_weights(const Tensor& x, const Tensor& attained, const Folded& f) {
  Tensor ties = x == f.restore(attained);
  return ties / ties.sum(f.dims(), true);
}

// amax and amin (over a dim list), max and min (over every dim).
template <bool kAllDims>
struct Extremum {
  template <class C>
  static Folded folded(const C& c) {
    if constexpr (kAllDims) {
      return folded_all(c);
    } else {
      return folded_dim_list(c);
    }
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded& f) {
    return tie_weights(c.input(0), c.output(), f);
  }
};

// max.dim and min.dim: all of it goes to the element the index output names.
struct ExtremumDim {
  template <class C>
  static Folded folded(const C& c) {
    return Folded(input_sizes(c), {c.int_arg(1)}, c.bool_arg(2));
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded& f) {
    const IntArrayRef sizes = input_sizes(c);
    const int64_t rank = static_cast<int64_t>(sizes.size());
    // Positions along the dim, shaped to broadcast against the input (a 0-dim
    // input is one position).
    const int64_t dim = rank == 0 ? 0 : wrap_dim(c.int_arg(1), rank, "strata::autograd");
    std::vector<int64_t> column(static_cast<size_t>(rank - dim), 1);
    const int64_t count = rank == 0 ? 1 : sizes[static_cast<size_t>(dim)];
    if (rank > 0) column[0] = count;
    return arange(count, kInt64).view(column) == f.restore(c.output(1));
  }
};

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
template <bool kStd>
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
    if (!kStd) return centered * (2.0 / dof);
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

template <class Op>
KernelFunction reduction(uint32_t saved_inputs, uint32_t saved_outputs) {
  return derivative({.backward = &reduction_backward<Op>,
                     .forward = &reduction_forward<Op>,
                     .saved_inputs = saved_inputs,
                     .saved_outputs = saved_outputs});
}

constexpr uint32_t kSelf = args(0);
constexpr uint32_t kResult = args(0);

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("sum.dim_IntList",
         derivative({.backward = &sum_backward, .forward = &autograd::linear_forward}));
  m.impl("mean.dim",
         derivative({.backward = &mean_backward, .forward = &autograd::linear_forward}));
  m.impl("prod", reduction<Prod>(kSelf, 0));
  m.impl("prod.dim_int", reduction<ProdDim>(kSelf, 0));
  m.impl("amax", reduction<Extremum<false>>(kSelf, kResult));
  m.impl("amin", reduction<Extremum<false>>(kSelf, kResult));
  m.impl("max", reduction<Extremum<true>>(kSelf, kResult));
  m.impl("min", reduction<Extremum<true>>(kSelf, kResult));
  m.impl("max.dim", reduction<ExtremumDim>(0, args(1)));
  m.impl("min.dim", reduction<ExtremumDim>(0, args(1)));
  m.impl("logsumexp", reduction<Logsumexp>(kSelf, kResult));
  m.impl("var.correction", reduction<Var<false>>(kSelf, 0));
  m.impl("std.correction", reduction<Var<true>>(kSelf, kResult));
  m.impl("norm", reduction<Norm>(kSelf, kResult));
}

}  // namespace
}  // namespace strata
