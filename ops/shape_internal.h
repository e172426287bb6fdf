#pragma once

// Helpers shared by the shape family files (shape_views.cpp, shape_strided.cpp,
// shape_slicing.cpp, shape_joins.cpp; defined in shape_common.cpp): the view
// constructor, and the pieces the views' shape functions, derivatives and
// batching rules have in common. Not part of the public API.

#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>

#include "dispatcher/boxing.h"
#include "dispatcher/kernel_function.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "dispatcher/op_def.h"
#include "ops/op_facets.h"
#include "tensor/error.h"
#include "tensor/small_vector.h"
#include "tensor/tensor.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata::shape_detail {

// A tensor over self's storage with the given geometry (no copy). Throws for a
// TensorImpl without storage of its own, which has nothing to view.
Tensor make_view(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset,
                 const char* op);

// The position at which a new dim goes into a tensor of `rank` dims: dim in
// [-rank - 1, rank], made non-negative.
int64_t wrap_insert_dim(int64_t dim, int64_t rank, const char* op);

// A tensor with t's geometry over storage that reaches as far as t does and
// holds no data, for a view kernel to compute geometry on when t has no storage
// (a trace's fake tensor); t itself when it has storage.
Tensor geometry_stand_in(const Tensor& t);
// Throws unless src has the region's sizes and self's dtype and device (the
// scatter ops: select/slice/diagonal/as_strided_scatter).
void check_scatter_src(const Tensor& self, const Tensor& src, IntArrayRef region, const char* op);

// ---- shape functions: a view reads no data, so its shape function is its
// kernel called on the arguments, and the two cannot disagree.

template <auto kKernel>
MetaList view_shape(OpArgs args) {
  using Args = typename detail::FunctionTraits<decltype(kKernel)>::Args;
  auto call = [&]<size_t... I>(std::index_sequence<I...>) {
    return kKernel(
        boxing::FromIValue<std::decay_t<std::tuple_element_t<I, Args>>>::get(args[I])...);
  };
  const Tensor out = call(std::make_index_sequence<std::tuple_size_v<Args>>());
  return shape::single(out.sizes(), out.dtype());
}

// The row of a primitive view: its kernel serves every backend (it only computes
// metadata), its shape function is that kernel's, and it does no arithmetic.
template <auto kKernel>
OpDef view_op(const char* schema, KernelFunction derivative, Kernel batching) {
  return {.schema = schema,
          .all_backends = kKernel,
          .derivative = std::move(derivative),
          .batching = std::move(batching),
          .shape = &view_shape<kKernel>,
          .flops = &flops::zero};
}

// ---- derivatives (Note [Derivative formulas]) of the primitive views; the
// composite views differentiate through them.
//
// A view's gradient puts the output's gradient back where the view took its
// elements from: a rearranging view rearranges it back, a view that takes part
// of its input (select, slice, diagonal) embeds it in zeros. The embedding is
// built from cat and views rather than written into a zero tensor in place, so
// the backward pass is itself differentiable (its derivative takes the part
// again) and needs no kernel of its own.

// Dims were checked by the forward call, so only negative ones need wrapping.
inline int64_t wrap_checked_dim(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

Tensor zeros_shaped(IntArrayRef sizes, const Tensor& like);

// A tensor like g but of size `size` along dim, holding g's slices at positions
// start, start + step, ... and zeros elsewhere (the adjoint of slicing them out).
Tensor embed(const Tensor& g, int64_t dim, int64_t size, int64_t start, int64_t step);

// The derivative of a view that applies to a tensor of any layout: the tangent is
// the same view of self's tangent.
KernelFunction view_derivative(autograd::BackwardFormula backward);

// ---- batching rules (Note [Batching rules]) of the primitive views; the
// composite views reach only these.
//
// A view of every sample is one view of the batched value: each rule calls the
// same op on the value with the sample's dims turned into the value's, so the
// result aliases the value and in-place writes through it reach the base. The
// batch dim stays where it is unless the view needs it elsewhere.

// A tensor batched at this vmap level, as a view's rule sees it.
struct BatchedView {
  const Tensor& sample;              // the batched tensor: its sizes are one sample's
  const batching::BatchedArg& self;  // its value and batch dim
  const char* op;

  const Tensor& value() const { return self.value; }
  int64_t bdim() const { return *self.bdim; }
  int64_t batch_size() const { return value().sizes()[bdim()]; }
  int64_t rank() const { return self.logical_dim(); }

  // Where dim `dim` of a sample is in the value: the sample's dims keep their
  // order around the batch dim.
  int64_t value_dim(int64_t dim) const {
    STRATA_CHECK(rank() > 0, op, "dim ", dim,
                 " is out of range for a tensor of rank 0: a 0-dim tensor has no dim to index");
    const int64_t d = wrap_dim(dim, rank(), op);
    return d < bdim() ? d : d + 1;
  }
  // The batch dim once the value's dims `removed` (other dims) are gone.
  int64_t bdim_without(std::initializer_list<int64_t> removed) const {
    int64_t moved = 0;
    for (int64_t d : removed) moved += d < bdim() ? 1 : 0;
    return bdim() - moved;
  }
  // Whether a sample is 0-dim, for which transpose and squeeze take dims 0 and -1
  // and leave it as it is.
  bool scalar_sample(std::initializer_list<int64_t> dims) const {
    if (rank() != 0) return false;
    for (int64_t d : dims) wrap_dim(d, 0, op);
    return true;
  }
};

// A view of the value and where the batch dim is in it.
struct ValueView {
  Tensor view;
  int64_t bdim;
};

// The rule of the view op described by `View`: its name, its Tensor method, and
// take(), which views the value as the op views every sample.
template <class View, class Take = decltype(&View::take)>
struct ViewRule;
template <class View, class... Args>
struct ViewRule<View, ValueView (*)(const BatchedView&, Args...)> {
  static Tensor call(const Tensor& self, Args... args) {
    const int64_t level = batching::current_vmap_level(View::name).level;
    const batching::BatchedArg x = batching::unwrap(self, level);
    // The ops below act on values, which are not batched at this level: they go
    // straight to the layers below instead of back to this level's rules.
    const ExcludeDispatchKeyGuard below(DispatchKey::Batched);
    if (!x.batched()) return (self.*View::method)(args...);
    ValueView v = View::take(BatchedView{self, x, View::name}, args...);
    return batching::make_batched(std::move(v.view), v.bdim, level);
  }
};

// The kernel and view_layout facet of a view that selects or slices (Note
// [View layouts]): `View::layout(ViewLayout&, args...)` turns self's layout
// into the view's, and the kernel is that applied to self.
template <class View, class Layout = decltype(&View::layout)>
struct LayoutView;
template <class View, class... Args>
struct LayoutView<View, void (*)(ViewLayout&, Args...)> {
  static Tensor kernel(const Tensor& self, Args... args) {
    ViewLayout layout = ViewLayout::of(self);
    View::layout(layout, args...);
    return make_view(self, layout.sizes, layout.strides, layout.offset, View::name);
  }
  static void from_ints(ViewLayout& layout, const ViewIntArgs& args) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      View::layout(layout, args.get<Args>(static_cast<uint8_t>(I))...);
    }(std::index_sequence_for<Args...>{});
  }
};

// The row of a primitive view given by its layout (LayoutView) and batched by
// its ViewRule.
template <class View>
OpDef layout_view_op(const char* schema, KernelFunction derivative) {
  OpDef row = view_op<&LayoutView<View>::kernel>(schema, std::move(derivative),
                                                 &ViewRule<View>::call);
  row.view_layout = &LayoutView<View>::from_ints;
  return row;
}

// ---- the _copy forms (select_copy, view_copy, ...): a view's values in memory of
// their own, what functionalize(f, Remove::MutationsAndViews) records instead of
// the view, so that no value of its graph aliases another. Each differentiates
// by its view's formulas (a copy is the identity on values), batches as its view
// followed by a copy, and has its view's shape.

template <auto kKernel>
struct CopyOf;
template <class... Args, Tensor (*kKernel)(const Tensor&, Args...)>
struct CopyOf<kKernel> {
  static Tensor call(const Tensor& self, Args... args) { return kKernel(self, args...).clone(); }
};

template <class View, class Take = decltype(&View::take)>
struct CopyRule;
template <class View, class... Args>
struct CopyRule<View, ValueView (*)(const BatchedView&, Args...)> {
  static Tensor call(const Tensor& self, Args... args) {
    return ViewRule<View>::call(self, args...).clone();
  }
};

// The shape function of a _copy form: its view's, on a stand-in for self, which
// may be a trace's fake tensor (a _copy op is not a view, so fake mode runs its
// shape function, not its kernel).
template <auto kKernel>
MetaList copy_shape(OpArgs args) {
  Stack with_stand_in(args.begin(), args.end());
  with_stand_in[0] = geometry_stand_in(args[0].to_tensor());
  return view_shape<kKernel>(OpArgs(with_stand_in.data(), with_stand_in.size()));
}

// The row of the _copy form of the view whose kernel is kKernel and whose
// batching rule is ViewRule<View>.
template <auto kKernel, class View>
OpDef copy_op(const char* schema, KernelFunction derivative) {
  return {.schema = schema,
          .all_backends = &CopyOf<kKernel>::call,
          .derivative = std::move(derivative),
          .batching = &CopyRule<View>::call,
          .shape = &copy_shape<kKernel>,
          .flops = &flops::zero};
}

// as_strided_scatter's batching rule (shape_strided_scatter_batching.cpp).
void as_strided_scatter_batched(const OperatorHandle& op, DispatchKeySet keys, Stack& stack);

}  // namespace strata::shape_detail
