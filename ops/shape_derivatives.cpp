// Derivative formulas (Note [Derivative formulas]) of the primitive views of
// shape_views.cpp and shape_slicing.cpp; the composite views (reshape, t,
// movedim, flatten, unflatten, narrow, split, chunk, unbind) differentiate
// through them.
//
// A view's gradient puts the output's gradient back where the view took its
// elements from: a rearranging view rearranges it back, a view that takes part
// of its input (select, slice, diagonal) embeds it in zeros. The embedding is
// built from cat and views rather than written into a zero tensor in place, so
// the backward pass is itself differentiable (its derivative takes the part
// again) and needs no kernel of its own.
#include <algorithm>
#include <vector>

#include "dispatcher/library.h"
#include "ops/ops.h"
#include "transforms/grad/derivative.h"

namespace strata {
namespace {

using autograd::args;
using autograd::BackwardContext;
using autograd::BackwardFormula;
using autograd::derivative;
using autograd::ForwardContext;

// Dims were checked by the forward call, so only negative ones need wrapping.
int64_t wrap(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

Tensor zeros_shaped(IntArrayRef sizes, const Tensor& like) {
  return zeros(sizes, like.dtype(), like.device());
}

// A tensor like g but of size `size` along dim, holding g's slices at positions
// start, start + step, ... and zeros elsewhere (the adjoint of slicing them out).
Tensor embed(const Tensor& g, int64_t dim, int64_t size, int64_t start, int64_t step) {
  DimVector shape(g.sizes());
  const int64_t n = shape[dim];
  if (n == 0) {
    shape[dim] = size;
    return zeros_shaped(shape, g);
  }
  Tensor spread = g;
  if (step > 1 && n > 1) {
    // Follow each slice by step - 1 zero slices, then drop the trailing ones.
    Tensor column = g.unsqueeze(dim + 1);
    DimVector gap_shape(column.sizes());
    gap_shape[dim + 1] = step - 1;
    spread = cat({column, zeros_shaped(gap_shape, g)}, dim + 1)
                 .flatten(dim, dim + 1)
                 .narrow(dim, 0, (n - 1) * step + 1);
  }
  std::vector<Tensor> pieces;
  auto pad = [&](int64_t length) {
    if (length == 0) return;
    shape[dim] = length;
    pieces.push_back(zeros_shaped(shape, g));
  };
  pad(start);
  pieces.push_back(spread);
  pad(size - start - spread.size(dim));
  return pieces.size() == 1 ? spread : cat(pieces, dim);
}

// view, unsqueeze, squeeze: the same elements in the same order.
void restore_shape_backward(BackwardContext& c) {
  c.set_grad(0, c.grad().reshape(c.input_sizes(0)));
}

// A tangent need not share its primal's layout (a broadcast result's tangent
// may be expanded, a clone's may be transposed), so it may not be viewable in
// the new shape: it is reshaped.
void view_forward(ForwardContext& c) { c.set_tangent(0, c.tangent(0).reshape(c.output().sizes())); }

void permute_backward(BackwardContext& c) {
  const std::vector<int64_t>& dims = c.int_list_arg(1);
  const int64_t rank = static_cast<int64_t>(dims.size());
  DimVector inverse(dims.size());
  for (int64_t i = 0; i < rank; ++i) inverse[wrap(dims[i], rank)] = i;
  c.set_grad(0, c.grad().permute(inverse));
}

void transpose_backward(BackwardContext& c) {
  c.set_grad(0, c.grad().transpose(c.int_arg(1), c.int_arg(2)));
}

void expand_backward(BackwardContext& c) {
  c.set_grad(0, autograd::sum_to(c.grad(), c.input_sizes(0)));
}

void select_backward(BackwardContext& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const int64_t dim = wrap(c.int_arg(1), static_cast<int64_t>(sizes.size()));
  const int64_t index = wrap(c.int_arg(2), sizes[dim]);
  c.set_grad(0, embed(c.grad().unsqueeze(dim), dim, sizes[dim], index, 1));
}

void slice_backward(BackwardContext& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const int64_t dim = wrap(c.int_arg(1), static_cast<int64_t>(sizes.size()));
  const int64_t size = sizes[dim];
  // The first index the slice took, clamped as the kernel clamps it.
  const IValue& start = c.arg(2);
  const int64_t first =
      start.is_none() ? 0 : std::clamp<int64_t>(wrap(start.to_int(), size), 0, size);
  c.set_grad(0, embed(c.grad(), dim, size, first, c.int_arg(4)));
}

// The diagonal of a (rows, cols) pair of dims is the strided slice of its
// flattening that starts at (row0, col0) and steps cols + 1.
void diagonal_backward(BackwardContext& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const int64_t offset = c.int_arg(1);
  const int64_t d1 = wrap(c.int_arg(2), rank);
  const int64_t d2 = wrap(c.int_arg(3), rank);
  const int64_t rows = sizes[d1];
  const int64_t cols = sizes[d2];
  const int64_t first = std::max<int64_t>(-offset, 0) * cols + std::max<int64_t>(offset, 0);
  const Tensor& g = c.grad();
  Tensor plane = embed(g, g.dim() - 1, rows * cols, first, cols + 1).unflatten(-1, {rows, cols});
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
    auto shifted = [lo](std::vector<int64_t> p) {
      for (int64_t& v : p) v -= lo;
      return tensor(p);
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

// The kernels of these ops are in shape_views.cpp and shape_slicing.cpp.
STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  // The other views apply to a tensor of any layout: the tangent is the same
  // view of self's tangent.
  auto view = [](BackwardFormula backward) {
    return derivative({.backward = backward, .forward = &autograd::linear_forward});
  };
  m.impl("view", derivative({.backward = &restore_shape_backward, .forward = &view_forward}));
  m.impl("unsqueeze", view(&restore_shape_backward));
  m.impl("squeeze", view(&restore_shape_backward));
  m.impl("squeeze.dim", view(&restore_shape_backward));
  m.impl("permute", view(&permute_backward));
  m.impl("transpose.int", view(&transpose_backward));
  m.impl("expand", view(&expand_backward));
  m.impl("diagonal", view(&diagonal_backward));
  m.impl("select.int", view(&select_backward));
  m.impl("slice.Tensor", view(&slice_backward));
  m.impl("as_strided", derivative({.backward = &as_strided_backward,
                                   .forward = &as_strided_forward,
                                   .saved_inputs = args(0)}));
}

}  // namespace
}  // namespace strata
