// The helpers of shape_internal.h, shared by the shape family files.
#include <vector>

#include "ops/ops.h"
#include "ops/shape_internal.h"
#include "tensor/dataless_storage.h"

namespace strata::shape_detail {

Tensor make_view(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset,
                 const char* op) {
  STRATA_CHECK(self.impl()->has_storage(), op, "cannot view a ", self.impl()->impl_name(),
               " of shape ", shape_string(self.sizes()), ": it has no storage of its own");
  STRATA_CHECK(checked_numel(sizes) >= 0, op, "the view's shape ", shape_string(sizes),
               " would have more than 2^63 - 1 elements (input shape ", shape_string(self.sizes()),
               ")");
  return Tensor(
      make_intrusive<TensorImpl>(self.impl()->storage(), self.dtype(), sizes, strides, offset));
}

Tensor geometry_stand_in(const Tensor& t) {
  if (t.impl()->has_storage()) return t;
  int64_t extent = t.numel() == 0 ? 0 : t.storage_offset() + 1;
  for (int64_t d = 0; d < t.dim() && extent > 0; ++d) extent += (t.sizes()[d] - 1) * t.strides()[d];
  const size_t nbytes = static_cast<size_t>(extent) * element_size(t.dtype());
  return Tensor(make_intrusive<TensorImpl>(dataless_storage(nbytes), t.dtype(), t.sizes(),
                                           t.strides(), t.storage_offset()));
}

int64_t wrap_insert_dim(int64_t dim, int64_t rank, const char* op) {
  STRATA_CHECK(dim >= -rank - 1 && dim <= rank, op, "dim ", dim,
               " is out of range for inserting a dim into a tensor of rank ", rank,
               " (expected a dim in [", -rank - 1, ", ", rank, "])");
  return dim < 0 ? dim + rank + 1 : dim;
}

Tensor zeros_shaped(IntArrayRef sizes, const Tensor& like) {
  return zeros(sizes, like.dtype(), like.device());
}

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

KernelFunction view_derivative(autograd::BackwardFormula backward) {
  return autograd::derivative({.backward = backward, .forward = &autograd::linear_forward});
}

}  // namespace strata::shape_detail
