// View operators that rearrange dims: view, reshape, as_strided, permute, transpose,
// t, movedim, unsqueeze, squeeze, expand, flatten, unflatten, diagonal.
//
// A view shares its input's storage and differs only in sizes, strides and
// offset. The primitive views are CompositeExplicitAutograd kernels: they only
// compute metadata, so every backend with strided storage gets them. Views that
// are compositions of others (reshape, t, movedim, flatten, unflatten) are
// CompositeImplicitAutograd, so transforms see only the primitives.
#include <algorithm>
#include <utility>

#include "dispatcher/library.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "ops/shape_internal.h"
#include "tensor/error.h"

namespace strata {

namespace shape_detail {

Tensor make_view(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset,
                 const char* op) {
  STRATA_CHECK(self.impl()->has_storage(), op, "cannot view a ", self.impl()->impl_name(),
               " of shape ", shape_string(self.sizes()), ": it has no storage of its own");
  return Tensor(
      make_intrusive<TensorImpl>(self.impl()->storage(), self.dtype(), sizes, strides, offset));
}

int64_t wrap_insert_dim(int64_t dim, int64_t rank, const char* op) {
  STRATA_CHECK(dim >= -rank - 1 && dim <= rank, op, "dim ", dim,
               " is out of range for inserting a dim into a tensor of rank ", rank,
               " (expected a dim in [", -rank - 1, ", ", rank, "])");
  return dim < 0 ? dim + rank + 1 : dim;
}

DimVector infer_size(IntArrayRef shape, int64_t numel, IntArrayRef input_sizes, const char* op) {
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      STRATA_CHECK(!inferred, op, "only one dim can be -1, got shape ", shape_string(shape));
      inferred = i;
    } else {
      STRATA_CHECK(shape[i] >= 0, op, "invalid size ", shape[i], " at dim ", i, " of shape ",
                   shape_string(shape));
      known *= shape[i];
    }
  }
  DimVector out(shape);
  if (inferred) {
    STRATA_CHECK(known != 0, op, "cannot infer the -1 in shape ", shape_string(shape),
                 " for input of shape ", shape_string(input_sizes), " with ", numel,
                 " elements: any size would fit");
    STRATA_CHECK(numel % known == 0, op, "shape ", shape_string(shape),
                 " is invalid for input of shape ", shape_string(input_sizes), " with ", numel,
                 " elements");
    out[*inferred] = numel / known;
  } else {
    STRATA_CHECK(known == numel, op, "shape ", shape_string(shape), " (", known,
                 " elements) is invalid for input of shape ", shape_string(input_sizes), " with ",
                 numel, " elements");
  }
  return out;
}

// Note [Viewing strided memory]
// Drop the size-1 dims of the input and cut the rest, innermost first, into
// chunks: maximal runs of dims in which each dim's stride is the next one's stride
// times its size, i.e. one evenly strided block of memory. A new shape views the
// same memory iff its dims, taken innermost first, multiply out to each chunk's
// size in turn — no new dim may straddle two chunks. Inside a chunk each new dim's
// stride is the chunk's innermost stride times the sizes of the new dims inside it.
// New size-1 dims may take any stride; they get the one a contiguous layout would.
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides,
                                      IntArrayRef new_sizes) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return contiguous_strides(new_sizes);  // nothing to address: any layout fits

  DimVector new_strides(new_sizes.size(), 0);
  int64_t old_dim = static_cast<int64_t>(sizes.size());  // input dims [0, old_dim) not yet used
  int64_t chunk_left = 1;  // elements of the current chunk not yet covered by new dims
  int64_t stride = 1;      // stride of the next new dim
  for (int64_t d = static_cast<int64_t>(new_sizes.size()) - 1; d >= 0; --d) {
    const int64_t size = new_sizes[d];
    if (size == 1) {
      new_strides[d] = stride;
      continue;
    }
    if (chunk_left == 1) {  // open the next chunk
      while (old_dim > 0 && sizes[old_dim - 1] == 1) --old_dim;
      if (old_dim == 0) return std::nullopt;
      --old_dim;
      stride = strides[old_dim];
      chunk_left = sizes[old_dim];
      int64_t outer = old_dim;  // the chunk's outermost dim so far
      while (old_dim > 0) {
        const int64_t prev = old_dim - 1;
        if (sizes[prev] != 1 && strides[prev] != strides[outer] * sizes[outer]) break;
        if (sizes[prev] != 1) {
          chunk_left *= sizes[prev];
          outer = prev;
        }
        old_dim = prev;
      }
    }
    if (chunk_left % size != 0) return std::nullopt;
    new_strides[d] = stride;
    stride *= size;
    chunk_left /= size;
  }
  return new_strides;
}

}  // namespace shape_detail

namespace {

using shape_detail::infer_size;
using shape_detail::make_view;
using shape_detail::view_strides;
using shape_detail::wrap_insert_dim;

Tensor view_kernel(const Tensor& self, IntArrayRef size) {
  const char* op = "strata::view";
  const DimVector shape = infer_size(size, self.numel(), self.sizes(), op);
  const std::optional<DimVector> strides = view_strides(self.sizes(), self.strides(), shape);
  STRATA_CHECK(strides.has_value(), op, "view size ", shape_string(shape),
               " is not compatible with the input's sizes ", shape_string(self.sizes()),
               " and strides ", shape_string(self.strides()),
               ": a new dim would span memory that is not evenly strided; use reshape, which "
               "copies when it must");
  return make_view(self, shape, *strides, self.storage_offset(), op);
}

Tensor reshape_composite(const Tensor& self, IntArrayRef size) {
  const DimVector shape = infer_size(size, self.numel(), self.sizes(), "strata::reshape");
  if (view_strides(self.sizes(), self.strides(), shape)) return self.view(shape);
  return self.clone().view(shape);
}

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
    if (sizes[d] > 0) last += (sizes[d] - 1) * strides[d];
  }
  STRATA_CHECK(self.impl()->has_storage(), op, "cannot view a ", self.impl()->impl_name(),
               ": it has no storage of its own");
  const int64_t capacity =
      static_cast<int64_t>(self.impl()->storage()->nbytes()) / element_size(self.dtype());
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

Tensor t_composite(const Tensor& self) {
  STRATA_CHECK(self.dim() <= 2, "strata::t", "expects a tensor with at most 2 dims, got shape ",
               shape_string(self.sizes()), " (rank ", self.dim(), "); use transpose(dim0, dim1)");
  return self.transpose(0, self.dim() < 2 ? 0 : 1);
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

Tensor unsqueeze_kernel(const Tensor& self, int64_t dim) {
  const char* op = "strata::unsqueeze";
  const int64_t d = wrap_insert_dim(dim, self.dim(), op);
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t stride = d < self.dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(static_cast<size_t>(d), 1);
  strides.insert(static_cast<size_t>(d), stride);
  return make_view(self, sizes, strides, self.storage_offset(), op);
}

Tensor squeeze_kernel(const Tensor& self) {
  DimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[d] == 1) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  return make_view(self, sizes, strides, self.storage_offset(), "strata::squeeze");
}

// A dim of size other than 1 stays, as in PyTorch.
Tensor squeeze_dim_kernel(const Tensor& self, int64_t dim) {
  const char* op = "strata::squeeze";
  const int64_t d = wrap_dim(dim, self.dim(), op);
  DimVector sizes(self.sizes()), strides(self.strides());
  if (self.dim() > 0 && sizes[d] == 1) {
    sizes.erase(static_cast<size_t>(d));
    strides.erase(static_cast<size_t>(d));
  }
  return make_view(self, sizes, strides, self.storage_offset(), op);
}

Tensor expand_kernel(const Tensor& self, IntArrayRef size) {
  const char* op = "strata::expand";
  const int64_t rank = self.dim();
  const int64_t new_rank = static_cast<int64_t>(size.size());
  STRATA_CHECK(new_rank >= rank, op, "the target shape ", shape_string(size), " has fewer dims (",
               new_rank, ") than the tensor's shape ", shape_string(self.sizes()));
  const int64_t leading = new_rank - rank;
  DimVector sizes(size), strides(size.size(), 0);
  for (int64_t d = 0; d < new_rank; ++d) {
    if (d < leading) {
      STRATA_CHECK(size[d] >= 0, op, "a new leading dim needs an explicit size, got ", size[d],
                   " at dim ", d, " of target shape ", shape_string(size));
      continue;  // stride 0: every index reads the same elements
    }
    const int64_t old_size = self.sizes()[d - leading];
    if (size[d] == -1 || size[d] == old_size) {
      sizes[d] = old_size;
      strides[d] = self.strides()[d - leading];
    } else {
      STRATA_CHECK(old_size == 1 && size[d] >= 0, op, "the size ", old_size, " of dim ",
                   d - leading, " of shape ", shape_string(self.sizes()), " cannot be expanded to ",
                   size[d], " (target shape ", shape_string(size), "); only size-1 dims expand");
    }
  }
  return make_view(self, sizes, strides, self.storage_offset(), op);
}

// A 0-dim tensor flattens to shape [1], as in PyTorch.
Tensor flatten_composite(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  const char* op = "strata::flatten";
  const int64_t start = wrap_dim(start_dim, self.dim(), op);
  const int64_t end = wrap_dim(end_dim, self.dim(), op);
  if (self.dim() == 0) return self.reshape({1});
  STRATA_CHECK(start <= end, op, "start_dim ", start_dim, " comes after end_dim ", end_dim,
               " for shape ", shape_string(self.sizes()));
  DimVector shape;
  int64_t flat = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d < start || d > end) {
      shape.push_back(self.sizes()[d]);
      continue;
    }
    flat *= self.sizes()[d];
    if (d == end) shape.push_back(flat);
  }
  return self.reshape(shape);
}

// Splitting one dim is always a view, whatever the strides.
Tensor unflatten_composite(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  const char* op = "strata::unflatten";
  STRATA_CHECK(self.dim() > 0, op, "cannot unflatten a 0-dim tensor");
  STRATA_CHECK(!sizes.empty(), op, "sizes must be non-empty");
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const DimVector inner = infer_size(sizes, self.sizes()[d], {self.sizes()[d]}, op);
  DimVector shape;
  for (int64_t k = 0; k < self.dim(); ++k) {
    if (k != d) {
      shape.push_back(self.sizes()[k]);
      continue;
    }
    for (int64_t s : inner) shape.push_back(s);
  }
  return self.view(shape);
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

STRATA_LIBRARY(strata, m) {
  m.def("view(Tensor(a) self, int[] size) -> Tensor(a)");
  m.def("reshape(Tensor(a) self, int[] shape) -> Tensor(a)");
  m.def(
      "as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> "
      "Tensor(a)");
  m.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)");
  m.def("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
  m.def("t(Tensor(a) self) -> Tensor(a)");
  m.def("movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)");
  m.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("squeeze(Tensor(a) self) -> Tensor(a)");
  m.def("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("expand(Tensor(a) self, int[] size) -> Tensor(a)");
  m.def("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)");
  m.def("unflatten.int(Tensor(a) self, int dim, int[] sizes) -> Tensor(a)");
  m.def("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)");
}

// Their derivative formulas are in shape_derivatives.cpp.
STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) {
  m.impl("view", &view_kernel);
  m.impl("as_strided", &as_strided_kernel);
  m.impl("permute", &permute_kernel);
  m.impl("transpose.int", &transpose_kernel);
  m.impl("unsqueeze", &unsqueeze_kernel);
  m.impl("squeeze", &squeeze_kernel);
  m.impl("squeeze.dim", &squeeze_dim_kernel);
  m.impl("expand", &expand_kernel);
  m.impl("diagonal", &diagonal_kernel);
}

STRATA_LIBRARY_IMPL(strata, CompositeImplicitAutograd, m) {
  m.impl("reshape", &reshape_composite);
  m.impl("t", &t_composite);
  m.impl("movedim.int", &movedim_composite);
  m.impl("flatten.using_ints", &flatten_composite);
  m.impl("unflatten.int", &unflatten_composite);
}

}  // namespace

Tensor Tensor::view(IntArrayRef sizes) const {
  return STRATA_OP("strata::view", "", Tensor(const Tensor&, IntArrayRef)).call(*this, sizes);
}

Tensor Tensor::reshape(IntArrayRef sizes) const {
  return STRATA_OP("strata::reshape", "", Tensor(const Tensor&, IntArrayRef)).call(*this, sizes);
}

Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset) const {
  return STRATA_OP("strata::as_strided", "",
                   Tensor(const Tensor&, IntArrayRef, IntArrayRef, std::optional<int64_t>))
      .call(*this, sizes, strides, storage_offset);
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

Tensor Tensor::unsqueeze(int64_t dim) const {
  return STRATA_OP("strata::unsqueeze", "", Tensor(const Tensor&, int64_t)).call(*this, dim);
}

Tensor Tensor::squeeze() const {
  return STRATA_OP("strata::squeeze", "", Tensor(const Tensor&)).call(*this);
}

Tensor Tensor::squeeze(int64_t dim) const {
  return STRATA_OP("strata::squeeze", "dim", Tensor(const Tensor&, int64_t)).call(*this, dim);
}

Tensor Tensor::expand(IntArrayRef sizes) const {
  return STRATA_OP("strata::expand", "", Tensor(const Tensor&, IntArrayRef)).call(*this, sizes);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return STRATA_OP("strata::flatten", "using_ints", Tensor(const Tensor&, int64_t, int64_t))
      .call(*this, start_dim, end_dim);
}

Tensor Tensor::unflatten(int64_t dim, IntArrayRef sizes) const {
  return STRATA_OP("strata::unflatten", "int", Tensor(const Tensor&, int64_t, IntArrayRef))
      .call(*this, dim, sizes);
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  return STRATA_OP("strata::diagonal", "", Tensor(const Tensor&, int64_t, int64_t, int64_t))
      .call(*this, offset, dim1, dim2);
}

}  // namespace strata
