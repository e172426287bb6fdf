// View operators that restride: permute, transpose, t and movedim reorder the
// dims, diagonal walks two dims at once, and as_strided takes any sizes and
// strides over the storage. permute, transpose, diagonal and as_strided are the
// primitives (CompositeExplicitAutograd, metadata only); t and movedim are
// CompositeImplicitAutograd compositions of them.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "ops/index_put_internal.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"

namespace strata {
namespace {

using shape_detail::BatchedView;
using shape_detail::copy_op;
using shape_detail::make_view;
using shape_detail::ValueView;
using shape_detail::view_derivative;
using shape_detail::view_op;
using shape_detail::ViewRule;
using shape_detail::wrap_checked_dim;
using shape_detail::zeros_shaped;
using IntList = std::vector<int64_t>;

Tensor as_strided_kernel(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                         std::optional<int64_t> storage_offset) {
  const char* op = "strata::as_strided";
  STRATA_CHECK(sizes.size() == strides.size(), op, "got ", sizes.size(), " sizes ",
               shape_string(sizes), " but ", strides.size(), " strides ", shape_string(strides));
  const int64_t offset = storage_offset.value_or(self.storage_offset());
  STRATA_CHECK(offset >= 0, op, "storage offset must be non-negative, got ", offset);
  int64_t last = offset;  // the furthest element the view reaches
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    STRATA_CHECK(sizes[d] >= 0 && strides[d] >= 0, op, "sizes ", shape_string(sizes),
                 " and strides ", shape_string(strides), " must be non-negative");
    empty = empty || sizes[d] == 0;
  }
  // Checked arithmetic: a reach past INT64_MAX must not wrap back into the storage.
  bool overflow = false;
  for (size_t d = 0; d < sizes.size() && !empty; ++d) {
    int64_t step = 0;
    overflow = overflow || __builtin_mul_overflow(sizes[d] - 1, strides[d], &step) ||
               __builtin_add_overflow(last, step, &last);
  }
  STRATA_CHECK(!overflow, op, "sizes ", shape_string(sizes), ", strides ", shape_string(strides),
               " and offset ", offset, " reach past element 2^63 - 1");
  STRATA_CHECK(self.impl()->has_storage(), op, "cannot view a ", self.impl()->impl_name(),
               ": it has no storage of its own");
  const int64_t capacity =
      static_cast<int64_t>(self.impl()->storage()->nbytes()) / element_size(self.dtype());
  // An empty view reads nothing, but its data pointer is still storage + offset,
  // which must stay within (or one past) the storage.
  STRATA_CHECK(!empty || offset <= capacity, op, "the empty view's storage offset ", offset,
               " is past the end of a storage of ", capacity, " elements");
  STRATA_CHECK(empty || last < capacity, op, "sizes ", shape_string(sizes), ", strides ",
               shape_string(strides), " and offset ", offset, " reach element ", last,
               ", past the end of a storage of ", capacity, " elements");
  return make_view(self, sizes, strides, offset, op);
}

Tensor permute_kernel(const Tensor& self, IntArrayRef dims) {
  const char* op = "strata::permute";
  const int64_t rank = self.dim();
  STRATA_CHECK(static_cast<int64_t>(dims.size()) == rank, op, "got ", dims.size(), " dims ",
               shape_string(dims), " for a tensor of rank ", rank, " (shape ",
               shape_string(self.sizes()), ")");
  DimVector sizes(dims.size()), strides(dims.size()), seen(dims.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], rank, op);
    STRATA_CHECK(!seen[d], op, "dim ", dims[i], " appears twice in ", shape_string(dims));
    seen[d] = 1;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return make_view(self, sizes, strides, self.storage_offset(), op);
}

Tensor transpose_kernel(const Tensor& self, int64_t dim0, int64_t dim1) {
  const char* op = "strata::transpose";
  const int64_t d0 = wrap_dim(dim0, self.dim(), op);
  const int64_t d1 = wrap_dim(dim1, self.dim(), op);
  DimVector sizes(self.sizes()), strides(self.strides());
  if (self.dim() > 0) {
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  return make_view(self, sizes, strides, self.storage_offset(), op);
}

// The dim t swaps with dim 0: 1, or 0 for a tensor of fewer than 2 dims.
int64_t t_other_dim(const Tensor& self, const char* op) {
  STRATA_CHECK(self.dim() <= 2, op, "expects a tensor with at most 2 dims, got shape ",
               shape_string(self.sizes()), " (rank ", self.dim(), "); use transpose(dim0, dim1)");
  return self.dim() < 2 ? 0 : 1;
}

Tensor t_composite(const Tensor& self) { return self.transpose(0, t_other_dim(self, "strata::t")); }

// t's _copy form (functionalize(f, Remove::MutationsAndViews) records it for t):
// transpose_copy, whose facets it takes.
Tensor t_copy_composite(const Tensor& self) {
  return STRATA_OP("strata::transpose_copy", "int", Tensor(const Tensor&, int64_t, int64_t))
      .call(self, 0, t_other_dim(self, "strata::t_copy"));
}

Tensor movedim_composite(const Tensor& self, int64_t source, int64_t destination) {
  const char* op = "strata::movedim";
  const int64_t rank = self.dim();
  const int64_t from = wrap_dim(source, rank, op);
  const int64_t to = wrap_dim(destination, rank, op);
  DimVector order;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != from) order.push_back(d);
  }
  if (rank > 0) order.insert(static_cast<size_t>(to), from);
  return self.permute(order);
}

Tensor diagonal_kernel(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  const char* op = "strata::diagonal";
  STRATA_CHECK(self.dim() >= 2, op, "expects a tensor with at least 2 dims, got shape ",
               shape_string(self.sizes()));
  const int64_t d1 = wrap_dim(dim1, self.dim(), op);
  const int64_t d2 = wrap_dim(dim2, self.dim(), op);
  STRATA_CHECK(d1 != d2, op, "dim1 (", dim1, ") and dim2 (", dim2, ") name the same dim of shape ",
               shape_string(self.sizes()));
  const int64_t rows = self.sizes()[d1];
  const int64_t cols = self.sizes()[d2];
  const int64_t length = std::max<int64_t>(
      offset >= 0 ? std::min(rows, cols - offset) : std::min(rows + offset, cols), 0);
  int64_t storage_offset = self.storage_offset();
  if (length > 0)
    storage_offset += offset >= 0 ? offset * self.strides()[d2] : -offset * self.strides()[d1];
  DimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  sizes.push_back(length);
  strides.push_back(self.strides()[d1] + self.strides()[d2]);
  return make_view(self, sizes, strides, storage_offset, op);
}

// ---- derivatives (shape_internal.h) ----

using autograd::BackwardContext;
using autograd::ForwardContext;

void permute_backward(BackwardContext& c) {
  const std::vector<int64_t>& dims = c.int_list_arg(1);
  const int64_t rank = static_cast<int64_t>(dims.size());
  DimVector inverse(dims.size());
  for (int64_t i = 0; i < rank; ++i) inverse[wrap_checked_dim(dims[i], rank)] = i;
  c.set_grad(0, c.grad().permute(inverse));
}

void transpose_backward(BackwardContext& c) {
  c.set_grad(0, c.grad().transpose(c.int_arg(1), c.int_arg(2)));
}

// The diagonal of a (rows, cols) pair of dims is the strided slice of its
// flattening that starts at (row0, col0) and steps cols + 1.
void diagonal_backward(BackwardContext& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const int64_t offset = c.int_arg(1);
  const int64_t d1 = wrap_checked_dim(c.int_arg(2), rank);
  const int64_t d2 = wrap_checked_dim(c.int_arg(3), rank);
  const int64_t rows = sizes[d1];
  const int64_t cols = sizes[d2];
  const int64_t first = std::max<int64_t>(-offset, 0) * cols + std::max<int64_t>(offset, 0);
  const Tensor& g = c.grad();
  Tensor plane =
      shape_detail::embed(g, g.dim() - 1, rows * cols, first, cols + 1).unflatten(-1, {rows, cols});
  // plane's dims are the other dims in order, then d1, then d2: put d1 and d2 back.
  DimVector perm;
  for (int64_t d = 0, other = 0; d < rank; ++d) {
    perm.push_back(d == d1 ? rank - 2 : d == d2 ? rank - 1 : other++);
  }
  c.set_grad(0, plane.permute(perm));
}

// Storage positions of the elements of a strided tensor, in row-major order.
std::vector<int64_t> positions(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  std::vector<int64_t> out{offset};
  for (size_t d = 0; d < sizes.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(out.size() * static_cast<size_t>(sizes[d]));
    for (int64_t p : out) {
      for (int64_t i = 0; i < sizes[d]; ++i) next.push_back(p + i * strides[d]);
    }
    out = std::move(next);
  }
  return out;
}

// as_strided's output element k reads memory location read[k]; self's element j
// is location own[j]. An input element's gradient is the sum over the output
// elements reading its location; an output element's tangent is the tangent of
// the input element at its location (zero where it reads outside self). This
// assumes, as the inverse of any formula must, that self's elements do not share
// memory. Both move values between the two lists of locations through a
// scratch memory spanning them, with index_add and index_select, so each
// formula's derivative is the other's.
struct StridedLocations {
  Tensor read, own;  // positions in the scratch memory
  int64_t span;

  StridedLocations(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                   const IValue& offset) {
    const int64_t out_offset = offset.is_none() ? self.storage_offset() : offset.to_int();
    const std::vector<int64_t> r = positions(sizes, strides, out_offset);
    const std::vector<int64_t> o = positions(self.sizes(), self.strides(), self.storage_offset());
    const auto [read_lo, read_hi] = std::minmax_element(r.begin(), r.end());
    const auto [own_lo, own_hi] = std::minmax_element(o.begin(), o.end());
    const int64_t lo = std::min(*read_lo, *own_lo);
    span = std::max(*read_hi, *own_hi) - lo + 1;
    auto shifted = [lo, device = self.device()](std::vector<int64_t> p) {
      for (int64_t& v : p) v -= lo;
      return index_put_detail::offsets_on(p, device, "strata::as_strided_backward");
    };
    read = shifted(r);
    own = shifted(o);
  }

  // `values` (one per location of `from`) moved to the locations of `to`, shaped `sizes`.
  Tensor move(const Tensor& values, const Tensor& from, const Tensor& to, IntArrayRef sizes) const {
    return zeros_shaped({span}, values)
        .index_add(0, from, values.reshape({-1}))
        .index_select(0, to)
        .view(sizes);
  }
};

void as_strided_backward(BackwardContext& c) {
  const Tensor& self = c.input(0);
  const Tensor& g = c.grad();
  if (self.numel() == 0 || g.numel() == 0) {
    c.set_grad(0, zeros_shaped(self.sizes(), g));
    return;
  }
  const StridedLocations at(self, c.int_list_arg(1), c.int_list_arg(2), c.arg(3));
  c.set_grad(0, at.move(g, at.read, at.own, self.sizes()));
}

void as_strided_forward(ForwardContext& c) {
  const Tensor& self = c.input(0);
  const Tensor& t = c.tangent(0);
  const Tensor& out = c.output();
  if (self.numel() == 0 || out.numel() == 0) {
    c.set_tangent(0, zeros_shaped(out.sizes(), t));
    return;
  }
  const StridedLocations at(self, c.int_list_arg(1), c.int_list_arg(2), c.arg(3));
  c.set_tangent(0, at.move(t, at.own, at.read, out.sizes()));
}

// ---- as_strided_scatter, as_strided's scatter form (shape_scatter.cpp has the
// others): a copy of self, laid out as self is over memory of its own, whose
// locations that self.as_strided(size, stride, storage_offset) reads hold src.
// That is self's value after writing src through the view, so the op depends on
// self's layout, as as_strided does. The region's elements must not share a
// location: a write through them has no single value.

Tensor as_strided_scatter_kernel(const Tensor& self, const Tensor& src, IntArrayRef size,
                                 IntArrayRef stride, std::optional<int64_t> storage_offset) {
  const char* op = "strata::as_strided_scatter";
  shape_detail::check_scatter_src(self, src, size, op);
  STRATA_CHECK(self.impl()->has_storage(), op, "cannot scatter into a ", self.impl()->impl_name(),
               ": it has no storage of its own");
  const int64_t capacity =
      static_cast<int64_t>(self.impl()->storage()->nbytes()) / element_size(self.dtype());
  Tensor out = zeros({capacity}, self.dtype(), self.device())
                   .as_strided(self.sizes(), self.strides(), self.storage_offset());
  out.copy_(self);
  const Tensor region = out.as_strided(size, stride, storage_offset);
  std::vector<int64_t> at =
      positions(size, stride, storage_offset.value_or(self.storage_offset()));
  std::sort(at.begin(), at.end());
  STRATA_CHECK(std::adjacent_find(at.begin(), at.end()) == at.end(), op, "the region (sizes ",
               shape_string(size), ", strides ", shape_string(stride),
               ") has elements that share a location: writing src through it has no single value");
  region.copy_(src);
  return out;
}

MetaList as_strided_scatter_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  shape_detail::check_scatter_src(self, shape::tensor_arg(args, 1), args[2].to_int_list(),
                    "strata::as_strided_scatter");
  return shape::single(self.sizes(), self.dtype());
}

// Linear in self and src: the output is self off the region's locations and
// src on them. `on_region` keeps the part of a tensor shaped like self that the
// region covers; `into_self` puts region-shaped values at self's elements there.
struct ScatterLocations {
  std::optional<StridedLocations> at;  // none when self or the region is empty
  DimVector self_sizes, region_sizes;

  ScatterLocations(const Tensor& self, IntArrayRef size, IntArrayRef stride, const IValue& offset)
      : self_sizes(self.sizes()), region_sizes(size) {
    if (self.numel() > 0 && checked_numel(size) > 0) at.emplace(self, size, stride, offset);
  }
  Tensor region_of(const Tensor& t) const {
    return at ? at->move(t, at->own, at->read, region_sizes) : zeros_shaped(region_sizes, t);
  }
  Tensor into_self(const Tensor& r) const {
    return at ? at->move(r, at->read, at->own, self_sizes) : zeros_shaped(self_sizes, r);
  }
};

void as_strided_scatter_backward(BackwardContext& c) {
  const ScatterLocations loc(c.input(0), c.int_list_arg(2), c.int_list_arg(3), c.arg(4));
  const Tensor& g = c.grad();
  const Tensor g_region = loc.region_of(g);
  if (c.needs_grad(0)) c.set_grad(0, g - loc.into_self(g_region));
  if (c.needs_grad(1)) c.set_grad(1, g_region);
}

void as_strided_scatter_forward(ForwardContext& c) {
  const ScatterLocations loc(c.input(0), c.int_list_arg(2), c.int_list_arg(3), c.arg(4));
  const Tensor t_self = c.tangent_or_zeros(0);
  c.set_tangent(0, t_self - loc.into_self(loc.region_of(t_self)) +
                       loc.into_self(c.tangent_or_zeros(1)));
}

// ---- batching rules (shape_internal.h) ----

// Sample b of the value starts at the value's storage offset plus b times the
// batch stride, and a sample's own storage offset reads as 0 (BatchedTensorImpl),
// so a storage_offset given inside vmap counts from the start of each sample.
struct AsStrided {
  static constexpr const char* name = "strata::as_strided";
  static constexpr auto method = &Tensor::as_strided;
  static ValueView take(const BatchedView& v, IntArrayRef size, IntArrayRef stride,
                        std::optional<int64_t> storage_offset) {
    const int64_t offset = storage_offset.value_or(0);
    STRATA_CHECK(offset >= 0, v.op, "storage offset must be non-negative, got ", offset);
    IntList sizes{v.batch_size()};
    sizes.insert(sizes.end(), size.begin(), size.end());
    IntList strides{v.value().strides()[v.bdim()]};
    strides.insert(strides.end(), stride.begin(), stride.end());
    return {v.value().as_strided(sizes, strides, v.value().storage_offset() + offset), 0};
  }
};

struct Permute {
  static constexpr const char* name = "strata::permute";
  static constexpr auto method = &Tensor::permute;
  static ValueView take(const BatchedView& v, IntArrayRef dims) {
    STRATA_CHECK(static_cast<int64_t>(dims.size()) == v.rank(), v.op, "got ", dims.size(), " dims ",
                 shape_string(dims), " for a tensor of rank ", v.rank(), " (shape ",
                 shape_string(v.sample.sizes()), ")");
    IntList order;
    order.reserve(dims.size() + 1);
    std::vector<bool> seen(static_cast<size_t>(v.rank() + 1), false);
    for (int64_t d : dims) {
      if (static_cast<int64_t>(order.size()) == v.bdim()) order.push_back(v.bdim());
      const int64_t p = v.value_dim(d);
      STRATA_CHECK(!seen[p], v.op, "dim ", d, " appears twice in ", shape_string(dims));
      seen[p] = true;
      order.push_back(p);
    }
    if (static_cast<int64_t>(order.size()) == v.bdim()) order.push_back(v.bdim());
    return {v.value().permute(order), v.bdim()};
  }
};

struct Transpose {
  static constexpr const char* name = "strata::transpose";
  static constexpr auto method = &Tensor::transpose;
  static ValueView take(const BatchedView& v, int64_t dim0, int64_t dim1) {
    if (v.scalar_sample({dim0, dim1})) return {v.value(), v.bdim()};
    return {v.value().transpose(v.value_dim(dim0), v.value_dim(dim1)), v.bdim()};
  }
};

struct Diagonal {
  static constexpr const char* name = "strata::diagonal";
  static constexpr auto method = &Tensor::diagonal;
  static ValueView take(const BatchedView& v, int64_t offset, int64_t dim1, int64_t dim2) {
    STRATA_CHECK(v.rank() >= 2, v.op, "expects a tensor with at least 2 dims, got shape ",
                 shape_string(v.sample.sizes()));
    const int64_t d1 = v.value_dim(dim1);
    const int64_t d2 = v.value_dim(dim2);
    return {v.value().diagonal(offset, d1, d2), v.bdim_without({d1, d2})};
  }
};

// ---- the rows (Note [One op, one place]) ----

KernelFunction as_strided_derivative() {
  return autograd::derivative({.backward = &as_strided_backward,
                               .forward = &as_strided_forward,
                               .saved_inputs = autograd::args(0)});
}

const OpFamily kStridedViewOps("shape_strided", {
    view_op<&as_strided_kernel>(
        "as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> "
        "Tensor(a)",
        as_strided_derivative(), &ViewRule<AsStrided>::call),
    copy_op<&as_strided_kernel, AsStrided>(
        "as_strided_copy(Tensor self, int[] size, int[] stride, int? storage_offset=None) -> "
        "Tensor",
        as_strided_derivative()),
    view_op<&permute_kernel>("permute(Tensor(a) self, int[] dims) -> Tensor(a)",
                             view_derivative(&permute_backward), &ViewRule<Permute>::call),
    {.schema = "as_strided_scatter(Tensor self, Tensor src, int[] size, int[] stride, "
               "int? storage_offset=None) -> Tensor",
     .all_backends = &as_strided_scatter_kernel,
     .derivative = autograd::derivative({.backward = &as_strided_scatter_backward,
                                         .forward = &as_strided_scatter_forward,
                                         .saved_inputs = autograd::args(0)}),
     .batching = KernelFunction::from_boxed(&shape_detail::as_strided_scatter_batched),
     .shape = &as_strided_scatter_shape,
     .flops = &flops::zero},
    copy_op<&permute_kernel, Permute>("permute_copy(Tensor self, int[] dims) -> Tensor",
                                      view_derivative(&permute_backward)),
    view_op<&transpose_kernel>("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
                               view_derivative(&transpose_backward), &ViewRule<Transpose>::call),
    copy_op<&transpose_kernel, Transpose>(
        "transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor",
        view_derivative(&transpose_backward)),
    {.schema = "t(Tensor(a) self) -> Tensor(a)", .decomposition = &t_composite},
    {.schema = "t_copy(Tensor self) -> Tensor", .decomposition = &t_copy_composite},
    {.schema = "movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)",
     .decomposition = &movedim_composite},
    view_op<&diagonal_kernel>(
        "diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
        view_derivative(&diagonal_backward), &ViewRule<Diagonal>::call),
    copy_op<&diagonal_kernel, Diagonal>(
        "diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor",
        view_derivative(&diagonal_backward)),
});

}  // namespace

Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset) const {
  return STRATA_OP("strata::as_strided", "",
                   Tensor(const Tensor&, IntArrayRef, IntArrayRef, std::optional<int64_t>))
      .call(*this, sizes, strides, storage_offset);
}

Tensor as_strided_scatter(const Tensor& self, const Tensor& src, IntArrayRef size,
                          IntArrayRef stride, std::optional<int64_t> storage_offset) {
  return STRATA_OP("strata::as_strided_scatter", "",
                   Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef,
                          std::optional<int64_t>))
      .call(self, src, size, stride, storage_offset);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  return STRATA_OP("strata::permute", "", Tensor(const Tensor&, IntArrayRef)).call(*this, dims);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return STRATA_OP("strata::transpose", "int", Tensor(const Tensor&, int64_t, int64_t))
      .call(*this, dim0, dim1);
}

Tensor Tensor::t() const { return STRATA_OP("strata::t", "", Tensor(const Tensor&)).call(*this); }

Tensor Tensor::movedim(int64_t source, int64_t destination) const {
  return STRATA_OP("strata::movedim", "int", Tensor(const Tensor&, int64_t, int64_t))
      .call(*this, source, destination);
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  return STRATA_OP("strata::diagonal", "", Tensor(const Tensor&, int64_t, int64_t, int64_t))
      .call(*this, offset, dim1, dim2);
}

}  // namespace strata
