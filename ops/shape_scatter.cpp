// The scatter forms of the region-taking views: select_scatter, slice_scatter and
// diagonal_scatter return a copy of self whose region (the view the op names)
// holds src. They are what a write through a view becomes when nothing may be
// written in place (functionalize): base.select(0, 1).mul_(y) is
// base = select_scatter(base, base.select(0, 1) * y, 0, 1). Each is linear in
// self and src: the gradient of self is the output's with the region zeroed, the
// gradient of src is the output's region.
#include <algorithm>
#include <optional>

#include "ops/op_handle.h"
#include "ops/ops.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"

namespace strata {
namespace {

using shape_detail::check_scatter_src;
using shape_detail::wrap_checked_dim;
using shape_detail::zeros_shaped;

// ---- the region each op writes, from sizes alone (kernels and shape functions)

DimVector select_region(IntArrayRef sizes, int64_t dim, int64_t index, const char* op) {
  STRATA_CHECK(!sizes.empty(), op, "a 0-dim self has no dim to select from");
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(sizes.size()), op);
  STRATA_CHECK(index >= -sizes[d] && index < sizes[d], op, "index ", index,
               " is out of range for dim ", dim, " of size ", sizes[d], " (shape ",
               shape_string(sizes), ")");
  DimVector region(sizes);
  region.erase(static_cast<size_t>(d));
  return region;
}

DimVector slice_region(IntArrayRef sizes, int64_t dim, std::optional<int64_t> start,
                       std::optional<int64_t> end, int64_t step, const char* op) {
  STRATA_CHECK(!sizes.empty(), op, "a 0-dim self has no dim to slice");
  STRATA_CHECK(step >= 1, op, "step must be positive, got ", step);
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(sizes.size()), op);
  const int64_t size = sizes[d];
  auto clamp_bound = [size](int64_t bound) {
    return std::clamp<int64_t>(bound < 0 ? bound + size : bound, 0, size);
  };
  const int64_t first = clamp_bound(start.value_or(0));
  const int64_t last = std::max(first, clamp_bound(end.value_or(size)));
  DimVector region(sizes);
  // ceil((last - first) / step), without last - first + step - 1 overflowing for a huge step.
  region[d] = (last - first) / step + ((last - first) % step != 0);
  return region;
}

DimVector diagonal_region(IntArrayRef sizes, int64_t offset, int64_t dim1, int64_t dim2,
                          const char* op) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  STRATA_CHECK(rank >= 2, op, "expects a self with at least 2 dims, got shape ",
               shape_string(sizes));
  const int64_t d1 = wrap_dim(dim1, rank, op);
  const int64_t d2 = wrap_dim(dim2, rank, op);
  STRATA_CHECK(d1 != d2, op, "dim1 (", dim1, ") and dim2 (", dim2, ") name the same dim");
  const int64_t rows = sizes[d1];
  const int64_t cols = sizes[d2];
  DimVector region;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != d1 && d != d2) region.push_back(sizes[d]);
  }
  region.push_back(std::max<int64_t>(
      offset >= 0 ? std::min(rows, cols - offset) : std::min(rows + offset, cols), 0));
  return region;
}


// ---- kernels (every backend: a copy of self, then a write into its region)

Tensor select_scatter_kernel(const Tensor& self, const Tensor& src, int64_t dim, int64_t index) {
  const char* op = "strata::select_scatter";
  check_scatter_src(self, src, select_region(self.sizes(), dim, index, op), op);
  Tensor out = self.clone();
  out.select(dim, index).copy_(src);
  return out;
}

Tensor slice_scatter_kernel(const Tensor& self, const Tensor& src, int64_t dim,
                            std::optional<int64_t> start, std::optional<int64_t> end,
                            int64_t step) {
  const char* op = "strata::slice_scatter";
  check_scatter_src(self, src, slice_region(self.sizes(), dim, start, end, step, op), op);
  Tensor out = self.clone();
  out.slice(dim, start, end, step).copy_(src);
  return out;
}

Tensor diagonal_scatter_kernel(const Tensor& self, const Tensor& src, int64_t offset, int64_t dim1,
                               int64_t dim2) {
  const char* op = "strata::diagonal_scatter";
  check_scatter_src(self, src, diagonal_region(self.sizes(), offset, dim1, dim2, op), op);
  Tensor out = self.clone();
  out.diagonal(offset, dim1, dim2).copy_(src);
  return out;
}

// ---- the facets each op describes once: its region as a view, its scatter,
// its region's sizes and its dim arguments (for the batching rule).

struct SelectScatter {
  static constexpr const char* name = "strata::select_scatter";
  static Tensor region(const Tensor& t, const IValue* a) {
    return t.select(a[0].to_int(), a[1].to_int());
  }
  static Tensor scatter(const Tensor& self, const Tensor& src, const IValue* a) {
    return select_scatter(self, src, a[0].to_int(), a[1].to_int());
  }
  static DimVector region_sizes(IntArrayRef sizes, const IValue* a) {
    return select_region(sizes, a[0].to_int(), a[1].to_int(), name);
  }
  static constexpr size_t dim_args[] = {0};
};

struct SliceScatter {
  static constexpr const char* name = "strata::slice_scatter";
  static std::optional<int64_t> bound(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<int64_t>(v.to_int());
  }
  static Tensor region(const Tensor& t, const IValue* a) {
    return t.slice(a[0].to_int(), bound(a[1]), bound(a[2]), a[3].to_int());
  }
  static Tensor scatter(const Tensor& self, const Tensor& src, const IValue* a) {
    return slice_scatter(self, src, a[0].to_int(), bound(a[1]), bound(a[2]), a[3].to_int());
  }
  static DimVector region_sizes(IntArrayRef sizes, const IValue* a) {
    return slice_region(sizes, a[0].to_int(), bound(a[1]), bound(a[2]), a[3].to_int(), name);
  }
  static constexpr size_t dim_args[] = {0};
};

struct DiagonalScatter {
  static constexpr const char* name = "strata::diagonal_scatter";
  static Tensor region(const Tensor& t, const IValue* a) {
    return t.diagonal(a[0].to_int(), a[1].to_int(), a[2].to_int());
  }
  static Tensor scatter(const Tensor& self, const Tensor& src, const IValue* a) {
    return diagonal_scatter(self, src, a[0].to_int(), a[1].to_int(), a[2].to_int());
  }
  static DimVector region_sizes(IntArrayRef sizes, const IValue* a) {
    return diagonal_region(sizes, a[0].to_int(), a[1].to_int(), a[2].to_int(), name);
  }
  static constexpr size_t dim_args[] = {1, 2};
};

// The arguments after self and src.
const IValue* rest(OpArgs args) { return args.data() + 2; }

template <class Op>
MetaList scatter_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  const Tensor& src = shape::tensor_arg(args, 1);
  check_scatter_src(self, src, Op::region_sizes(self.sizes(), rest(args)), Op::name);
  return shape::single(self.sizes(), self.dtype());
}

// ---- derivatives (Note [Derivative formulas])

using autograd::BackwardContext;

template <class Op>
void scatter_backward(BackwardContext& c) {
  const Tensor& g = c.grad();
  const IValue* a = &c.arg(2);
  if (c.needs_grad(0)) {
    c.set_grad(0, Op::scatter(g, zeros_shaped(Op::region_sizes(g.sizes(), a), g), a));
  }
  if (c.needs_grad(1)) c.set_grad(1, Op::region(g, a));
}

template <class Op>
KernelFunction scatter_derivative() {
  return autograd::derivative(
      {.backward = &scatter_backward<Op>, .forward = &autograd::linear_forward});
}

// ---- batching (Note [Batching rules]): self and src batch first (an unbatched
// one expanded: the copy of self is the output anyway), the dims shift by one.

template <class Op>
void scatter_batched(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  const batching::VmapLevel at = batching::current_vmap_level(Op::name);
  const size_t first = stack.size() - op.schema().arguments().size();
  const batching::BatchedArg self = batching::unwrap(stack[first].to_tensor(), at.level);
  const batching::BatchedArg src = batching::unwrap(stack[first + 1].to_tensor(), at.level);
  const batching::BelowThisLevel below;
  Stack args(stack.begin() + static_cast<std::ptrdiff_t>(first) + 2, stack.end());
  Tensor out;
  if (!self.batched() && !src.batched()) {
    out = Op::scatter(self.value, src.value, args.data());
  } else {
    for (size_t i : Op::dim_args) {
      args[i] = batching::batch_first_dim(args[i].to_int(), self.logical_dim(), Op::name);
    }
    out = batching::make_batched(
        Op::scatter(batching::batch_first_expanded(self, at.batch_size),
                    batching::batch_first_expanded(src, at.batch_size), args.data()),
        0, at.level);
  }
  stack.resize(first);
  stack.emplace_back(std::move(out));
}

template <class Op, auto kKernel>
OpDef scatter_op(const char* schema) {
  return {.schema = schema,
          .all_backends = kKernel,
          .derivative = scatter_derivative<Op>(),
          .batching = KernelFunction::from_boxed(&scatter_batched<Op>),
          .shape = &scatter_shape<Op>,
          .flops = &flops::zero};
}

const OpFamily kScatterOps(
    "shape_scatter",
    {
        scatter_op<SelectScatter, &select_scatter_kernel>(
            "select_scatter(Tensor self, Tensor src, int dim, int index) -> Tensor"),
        scatter_op<SliceScatter, &slice_scatter_kernel>(
            "slice_scatter(Tensor self, Tensor src, int dim=0, int? start=None, int? end=None, "
            "int step=1) -> Tensor"),
        scatter_op<DiagonalScatter, &diagonal_scatter_kernel>(
            "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> "
            "Tensor"),
    });

}  // namespace

Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index) {
  return STRATA_OP("strata::select_scatter", "",
                   Tensor(const Tensor&, const Tensor&, int64_t, int64_t))
      .call(self, src, dim, index);
}

Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim,
                     std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  return STRATA_OP("strata::slice_scatter", "",
                   Tensor(const Tensor&, const Tensor&, int64_t, std::optional<int64_t>,
                          std::optional<int64_t>, int64_t))
      .call(self, src, dim, start, end, step);
}

Tensor diagonal_scatter(const Tensor& self, const Tensor& src, int64_t offset, int64_t dim1,
                        int64_t dim2) {
  return STRATA_OP("strata::diagonal_scatter", "",
                   Tensor(const Tensor&, const Tensor&, int64_t, int64_t, int64_t))
      .call(self, src, offset, dim1, dim2);
}

namespace shape_detail {

void check_scatter_src(const Tensor& self, const Tensor& src, IntArrayRef region, const char* op) {
  STRATA_CHECK(src.sizes() == region, op, "src of shape ", shape_string(src.sizes()),
               " does not fit the region of shape ", shape_string(region), " of self (shape ",
               shape_string(self.sizes()), ")");
  STRATA_CHECK(src.dtype() == self.dtype(), op, "src is ", src.dtype(), " but self is ",
               self.dtype());
  STRATA_CHECK(src.device() == self.device(), op, "src is on ", src.device(), " but self is on ",
               self.device());
}

}  // namespace shape_detail
}  // namespace strata
