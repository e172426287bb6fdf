#pragma once

// What the reduction families (ops/reduction_sum.cpp, reduction_extremum.cpp,
// reduction_statistics.cpp) share: planning a reduction (which the kernels and
// the shape functions both call, so the two cannot disagree), the batching rule
// of every reduction, and the frame of their derivative formulas.

#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dispatcher/boxing.h"
#include "dispatcher/op_def.h"
#include "kernels/cpu/reduction.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata::reduction {

using cpu::DimMask;

// ---- planning ----

// The dims a reduction folds, and the sizes and dtype of its result.
struct Reduction {
  DimMask reduced = 0;
  DimVector out_sizes;
  ScalarType out_dtype = kFloat32;  // of the values, for ops with indices too
  int64_t group_numel = 1;          // input elements per output element
};

// Wraps and checks `dims` (an empty list means every dim). A 0-dim input accepts
// dim 0 or -1 and reduces its single value.
Reduction plan_reduction(const Tensor& self, IntArrayRef dims, bool keepdim, ScalarType out_dtype,
                         const char* op);

// Max, min and their kin have no value for zero elements.
void check_nonempty_groups(const Tensor& self, const Reduction& r, IntArrayRef dims,
                           const char* op);
void check_floating(const Tensor& self, const char* op);

// A fresh result of the planned sizes and dtype, filled by kernel(out, self, reduced).
template <class Kernel>
Tensor reduce(const Tensor& self, const Reduction& r, const char* op, Kernel&& kernel) {
  Tensor out = make_empty_tensor(r.out_sizes, r.out_dtype, self.device(), op);
  kernel(out, self, r.reduced);
  return out;
}

// ---- shape functions and FLOP formulas (Note [One op, one place]) ----

// Calls `plan`, an op's planning function (whose parameters are the op's), on the
// op's boxed arguments.
template <class... Args>
Reduction plan_boxed(Reduction (*plan)(Args...), OpArgs args) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return plan(boxing::FromIValue<std::decay_t<Args>>::get(args[I])...);
  }
  (std::index_sequence_for<Args...>());
}

// The one result that kPlan plans.
template <auto kPlan>
MetaList planned_shape(OpArgs args) {
  const Reduction r = plan_boxed(kPlan, args);
  return {TensorMeta{r.out_sizes, r.out_dtype}};
}

// max.dim and min.dim: the values kPlan plans and their Int64 indices.
template <auto kPlan>
MetaList values_and_indices_shape(OpArgs args) {
  const Reduction r = plan_boxed(kPlan, args);
  return {TensorMeta{r.out_sizes, r.out_dtype}, TensorMeta{r.out_sizes, kInt64}};
}

// kPerElement floating-point operations per element of the input (argument 0).
template <int64_t kPerElement>
int64_t per_input_element(OpArgs args, const MetaList&) {
  return kPerElement * args[0].to_tensor().numel();
}
// Sums, means, products and extrema: one add, multiply or comparison per input
// element (a mean's division per output element is left out).
inline constexpr FlopFn kOnePerInputElement = &per_input_element<1>;

// ---- batching rules (Note [Batching rules]) ----
// Reducing every sample over some of its dims is reducing the batch over the same
// dims, which leaves the batch dim in place (shifted by the dims before it that
// keepdim=false drops): no copy, whatever the batch dim. Only an op that reduces
// one dim, asked for every dim of a sample, reduces the flattened samples.

// Where the reduction of every sample happens in the batch.
struct BatchedReduction {
  Tensor value;    // the batch, or a view of it that the dims below fit
  DimVector dims;  // the dims of `value` to reduce
  bool keepdim;
  int64_t out_bdim;
  // The shape to give the result, where the reduction leaves it flattened.
  std::optional<DimVector> out_sizes;
};

// Plans the reduction of each sample of x over `dims` (empty: every dim). An op
// with `single_dim` reduces one dim, so its "every dim" of a sample of rank > 1 is
// the one dim of the flattened sample.
BatchedReduction plan_batched_reduction(const batching::BatchedArg& x, IntArrayRef dims,
                                        bool keepdim, bool single_dim, const char* op);

Tensor batched_result(Tensor result, const BatchedReduction& r, int64_t level);

// A reduction's dim argument (int[], int, int?) as a list (empty: every dim), and
// a planned list as that argument (a single-dim op plans one dim).
inline IntArrayRef dims_of(IntArrayRef dims) { return dims; }
inline IntArrayRef dims_of(const int64_t& dim) { return IntArrayRef(dim); }
inline IntArrayRef dims_of(const std::optional<int64_t>& dim) {
  return dim ? IntArrayRef(*dim) : IntArrayRef();
}
template <class DimArg>
DimArg as_dim_arg(IntArrayRef dims) {
  if constexpr (std::is_same_v<DimArg, IntArrayRef>) {
    return dims;
  } else {
    return dims[0];
  }
}

// The batching rule of reduction method kMethod of op kName, whose arguments
// kDim and kKeepdim are its dims and keepdim: the same method on the batch.
template <auto kMethod, const char* kName, size_t kDim = 0, size_t kKeepdim = 1>
struct ReductionRule;
template <class Ret, class... Args, Ret (Tensor::*kMethod)(Args...) const, const char* kName,
          size_t kDim, size_t kKeepdim>
struct ReductionRule<kMethod, kName, kDim, kKeepdim> {
  using DimArg = std::tuple_element_t<kDim, std::tuple<Args...>>;

  static Ret call(const Tensor& self, Args... args) {
    const batching::VmapLevel at = batching::current_vmap_level(kName);
    const batching::BatchedArg x = batching::unwrap(self, at.level);
    const batching::BelowThisLevel below;
    if (!x.batched()) return (self.*kMethod)(args...);
    std::tuple<Args...> arguments{args...};
    const BatchedReduction r =
        plan_batched_reduction(x, dims_of(std::get<kDim>(arguments)), std::get<kKeepdim>(arguments),
                               !std::is_same_v<DimArg, IntArrayRef>, kName);
    std::get<kDim>(arguments) = as_dim_arg<DimArg>(r.dims);
    std::get<kKeepdim>(arguments) = r.keepdim;
    Ret result = std::apply([&](auto... a) { return (r.value.*kMethod)(a...); }, arguments);
    if constexpr (std::is_same_v<Ret, Tensor>) {
      return batched_result(std::move(result), r, at.level);
    } else {
      return {batched_result(std::get<0>(result), r, at.level),
              batched_result(std::get<1>(result), r, at.level)};
    }
  }
};

// prod(), max() and min() (kAll): kOverDims (prod over a dim, amax, amin) over
// every dim of a sample.
template <auto kAll, auto kOverDims, const char* kName>
struct EveryDimRule;
template <Tensor (Tensor::*kAll)() const, class DimArg,
          Tensor (Tensor::*kOverDims)(DimArg, bool) const, const char* kName>
struct EveryDimRule<kAll, kOverDims, kName> {
  static Tensor call(const Tensor& self) {
    const batching::VmapLevel at = batching::current_vmap_level(kName);
    const batching::BatchedArg x = batching::unwrap(self, at.level);
    const batching::BelowThisLevel below;
    if (!x.batched()) return (self.*kAll)();
    const BatchedReduction r =
        plan_batched_reduction(x, {}, false, !std::is_same_v<DimArg, IntArrayRef>, kName);
    return batched_result((r.value.*kOverDims)(as_dim_arg<DimArg>(r.dims), r.keepdim), r, at.level);
  }
};

using AllMethod = Tensor (Tensor::*)() const;
using DimListMethod = Tensor (Tensor::*)(IntArrayRef, bool) const;
using DimMethod = Tensor (Tensor::*)(int64_t, bool) const;

template <auto kMethod, const char* kName, size_t kDim = 0, size_t kKeepdim = 1>
inline constexpr auto kRule = &ReductionRule<kMethod, kName, kDim, kKeepdim>::call;

// ---- derivatives (Note [Derivative formulas]) ----

// The dims a reduction folded. A reduced tensor (the result, or its gradient)
// broadcasts against the input once restore() has put the folded dims back as
// size 1.
class Folded {
 public:
  // `dims` as the op took them: empty means every dim.
  Folded(IntArrayRef input_sizes, IntArrayRef dims, bool keepdim);

  Tensor restore(const Tensor& reduced) const;
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

inline IntArrayRef input_sizes(const autograd::BackwardContext& c) { return c.input_sizes(0); }
inline IntArrayRef input_sizes(const autograd::ForwardContext& c) { return c.input(0).sizes(); }

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

// Ops whose tensor argument 0 is followed by `int dim, bool keepdim`.
template <class Context>
Folded folded_one_dim(const Context& c) {
  return Folded(input_sizes(c), {c.int_arg(1)}, c.bool_arg(2));
}

// Most reductions have a local derivative d out / d x shaped like the input
// (Op::derivative, from the op's arguments and result as either context holds
// them): the gradient is the result's gradient put back over each group times
// it, and the tangent the sum over each group of the input's tangent times it.
template <class Op>
void reduction_backward(autograd::BackwardContext& c) {
  const Folded f = Op::folded(c);
  c.set_grad(0, f.restore(c.grad()) * Op::derivative(c, f));
}

template <class Op>
void reduction_forward(autograd::ForwardContext& c) {
  const Folded f = Op::folded(c);
  c.set_tangent(0, f.reduce(c.tangent(0) * Op::derivative(c, f)));
}

template <class Op>
KernelFunction reduction_derivative(uint32_t saved_inputs, uint32_t saved_outputs) {
  return autograd::derivative({.backward = &reduction_backward<Op>,
                               .forward = &reduction_forward<Op>,
                               .saved_inputs = saved_inputs,
                               .saved_outputs = saved_outputs});
}

inline constexpr uint32_t kSelf = autograd::args(0);
inline constexpr uint32_t kResult = autograd::args(0);

// A max or min is split evenly among the elements of the group that attain it
// (`attained` is the reduced value): each gets the gradient divided by their
// number, and the tangent is the mean of their tangents.
Tensor tie_weights(const Tensor& x, const Tensor& attained, const Folded& f);

}  // namespace strata::reduction
