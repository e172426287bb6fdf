// View operators that reshape: view, reshape, flatten, unflatten, unsqueeze,
// squeeze and expand; and stop_gradient, a view of the whole tensor that is a
// constant to every grad and jvp level. (permute, transpose, t, movedim, diagonal
// and as_strided
// are in shape_strided.cpp; the slicing views in shape_slicing.cpp.)
//
// A view shares its input's storage and differs only in sizes, strides and
// offset. The primitive views are CompositeExplicitAutograd kernels: they only
// compute metadata, so every backend with strided storage gets them. Views that
// are compositions of others (reshape, flatten, unflatten) are
// CompositeImplicitAutograd, so transforms see only the primitives.
#include <optional>
#include <vector>

#include "ops/op_handle.h"
#include "ops/ops.h"
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
using shape_detail::wrap_insert_dim;
using IntList = std::vector<int64_t>;

// `shape` with its -1 (at most one) replaced so the sizes multiply to `numel`;
// errors name `shape`, `input_sizes` and `numel`.
DimVector infer_size(IntArrayRef shape, int64_t numel, IntArrayRef input_sizes, const char* op) {
  std::optional<size_t> inferred;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      STRATA_CHECK(!inferred, op, "only one dim can be -1, got shape ", shape_string(shape));
      inferred = i;
    } else {
      STRATA_CHECK(shape[i] >= 0, op, "invalid size ", shape[i], " at dim ", i, " of shape ",
                   shape_string(shape));
    }
  }
  DimVector out(shape);
  if (inferred) out[*inferred] = 1;
  const int64_t known = checked_numel(out);
  STRATA_CHECK(known >= 0, op, "shape ", shape_string(shape), " would have more than 2^63 - 1 elements");
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
//
// The strides that show a tensor of (sizes, strides) with `new_sizes` without
// copying, or nothing when no such strides exist.
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

// view_copy copies what view would give and, where view is refused (a new dim
// would span unevenly strided memory), what reshape gives: the same elements in
// the same order, in memory of their own. Functionalize replays a view on a
// value laid out unlike eager's tensor (a written base is a fresh tensor), so
// the _copy form must not depend on the layout, as PyTorch's view_copy does not.
Tensor view_copy_kernel(const Tensor& self, IntArrayRef size) {
  const DimVector shape = infer_size(size, self.numel(), self.sizes(), "strata::view_copy");
  if (view_strides(self.sizes(), self.strides(), shape)) return view_kernel(self, shape).clone();
  return self.clone().view(shape);
}

MetaList view_copy_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  return shape::single(
      infer_size(args[1].to_int_list(), self.numel(), self.sizes(), "strata::view_copy"),
      self.dtype());
}

Tensor view_copy(const Tensor& self, IntArrayRef size) {
  return STRATA_OP("strata::view_copy", "", Tensor(const Tensor&, IntArrayRef)).call(self, size);
}

// Batch first, each sample copied as view_copy copies it (the batch dim leads
// the new shape); the value may be an outer level's batched tensor, so the op
// is called, not its kernel.
Tensor view_copy_batched(const Tensor& self, IntArrayRef size) {
  const batching::VmapLevel at = batching::current_vmap_level("strata::view_copy");
  const batching::BatchedArg x = batching::unwrap(self, at.level);
  const batching::BelowThisLevel below;
  if (!x.batched()) return view_copy(x.value, size);
  const Tensor value = batching::batch_first(x);
  const IntArrayRef sample(value.sizes().data() + 1, value.sizes().size() - 1);
  const DimVector sample_shape =
      infer_size(size, checked_numel(sample), sample, "strata::view_copy");
  IntList shape{at.batch_size};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  return batching::make_batched(view_copy(value, shape), 0, at.level);
}

Tensor reshape_composite(const Tensor& self, IntArrayRef size) {
  const DimVector shape = infer_size(size, self.numel(), self.sizes(), "strata::reshape");
  if (view_strides(self.sizes(), self.strides(), shape)) return self.view(shape);
  return self.clone().view(shape);
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

// ---- derivatives (shape_internal.h) ----

using autograd::BackwardContext;
using autograd::ForwardContext;

// view, unsqueeze, squeeze: the same elements in the same order.
void restore_shape_backward(BackwardContext& c) {
  c.set_grad(0, c.grad().reshape(c.input_sizes(0)));
}

// A tangent need not share its primal's layout (a broadcast result's tangent
// may be expanded, a clone's may be transposed), so it may not be viewable in
// the new shape: it is reshaped.
void view_forward(ForwardContext& c) { c.set_tangent(0, c.tangent(0).reshape(c.output().sizes())); }

void expand_backward(BackwardContext& c) {
  c.set_grad(0, autograd::sum_to(c.grad(), c.input_sizes(0)));
}

// The whole of self, as a new view: the transforms' derivative kernels treat it as
// non-differentiable, so the result carries no gradient or tangent of any level.
Tensor stop_gradient_kernel(const Tensor& self) {
  return make_view(self, self.sizes(), self.strides(), self.storage_offset(),
                   "strata::stop_gradient");
}

// ---- batching rules (shape_internal.h) ----

Tensor stop_gradient_batched(const Tensor& self) {
  const int64_t level = batching::current_vmap_level("strata::stop_gradient").level;
  const batching::BatchedArg x = batching::unwrap(self, level);
  const ExcludeDispatchKeyGuard below(DispatchKey::Batched);
  if (!x.batched()) return stop_gradient(self);
  return batching::make_batched(stop_gradient(x.value), x.bdim, level);
}

// The batch dim goes to the front, or stays last; the sample's shape is viewed
// around it, which is possible exactly when a sample alone could be viewed.
struct View {
  static constexpr const char* name = "strata::view";
  static constexpr auto method = &Tensor::view;
  static ValueView take(const BatchedView& v, IntArrayRef size) {
    const DimVector shape = infer_size(size, v.sample.numel(), v.sample.sizes(), v.op);
    const bool batch_last = v.bdim() != 0 && v.bdim() == v.value().dim() - 1;
    IntList sizes(shape.begin(), shape.end());
    sizes.insert(batch_last ? sizes.end() : sizes.begin(), v.batch_size());
    if (batch_last) return {v.value().view(sizes), static_cast<int64_t>(shape.size())};
    return {batching::batch_first(v.self).view(sizes), 0};
  }
};

struct Unsqueeze {
  static constexpr const char* name = "strata::unsqueeze";
  static constexpr auto method = &Tensor::unsqueeze;
  static ValueView take(const BatchedView& v, int64_t dim) {
    const int64_t d = wrap_insert_dim(dim, v.rank(), v.op);
    if (d < v.bdim()) return {v.value().unsqueeze(d), v.bdim() + 1};
    return {v.value().unsqueeze(d + 1), v.bdim()};
  }
};

// squeeze() would drop a batch of size 1 too: view the value without the
// samples' size-1 dims instead.
struct Squeeze {
  static constexpr const char* name = "strata::squeeze";
  static constexpr Tensor (Tensor::*method)() const = &Tensor::squeeze;
  static ValueView take(const BatchedView& v) {
    IntList sizes;
    int64_t bdim = 0;
    for (int64_t d = 0; d < v.value().dim(); ++d) {
      if (d == v.bdim()) bdim = static_cast<int64_t>(sizes.size());
      if (d == v.bdim() || v.value().sizes()[d] != 1) sizes.push_back(v.value().sizes()[d]);
    }
    if (static_cast<int64_t>(sizes.size()) == v.value().dim()) return {v.value(), v.bdim()};
    return {v.value().view(sizes), bdim};
  }
};

struct SqueezeDim {
  static constexpr const char* name = "strata::squeeze";
  static constexpr Tensor (Tensor::*method)(int64_t) const = &Tensor::squeeze;
  static ValueView take(const BatchedView& v, int64_t dim) {
    if (v.scalar_sample({dim})) return {v.value(), v.bdim()};
    const int64_t d = v.value_dim(dim);
    if (v.value().sizes()[d] != 1) return {v.value(), v.bdim()};
    return {v.value().squeeze(d), v.bdim_without({d})};
  }
};

// New leading dims go in front of the value, whatever its batch dim.
struct Expand {
  static constexpr const char* name = "strata::expand";
  static constexpr auto method = &Tensor::expand;
  static ValueView take(const BatchedView& v, IntArrayRef size) {
    const int64_t leading = static_cast<int64_t>(size.size()) - v.rank();
    STRATA_CHECK(leading >= 0, v.op, "the target shape ", shape_string(size), " has fewer dims (",
                 size.size(), ") than the tensor's shape ", shape_string(v.sample.sizes()));
    const int64_t bdim = leading + v.bdim();
    IntList sizes(size.begin(), size.end());
    sizes.insert(sizes.begin() + bdim, v.batch_size());
    return {v.value().expand(sizes), bdim};
  }
};

// ---- the rows (Note [One op, one place]) ----

// view and view_copy: the gradient takes the input's shape back, the tangent the output's.
KernelFunction reshaping_derivative() {
  return autograd::derivative({.backward = &restore_shape_backward, .forward = &view_forward});
}

// stop_gradient's copy: the values, a constant to every level, in memory of their own.
Tensor stop_gradient_copy_kernel(const Tensor& self) { return stop_gradient_kernel(self).clone(); }
Tensor stop_gradient_copy_batched(const Tensor& self) {
  return stop_gradient_batched(self).clone();
}

const char* const kConstant = "a constant to every grad and jvp level";

const OpFamily kViewOps("shape_views", {
    view_op<&view_kernel>("view(Tensor(a) self, int[] size) -> Tensor(a)", reshaping_derivative(),
                          &ViewRule<View>::call),
    {.schema = "view_copy(Tensor self, int[] size) -> Tensor",
     .all_backends = &view_copy_kernel,
     .derivative = reshaping_derivative(),
     .batching = &view_copy_batched,
     .shape = &view_copy_shape,
     .flops = &flops::zero},
    {.schema = "reshape(Tensor(a) self, int[] shape) -> Tensor(a)",
     .decomposition = &reshape_composite},
    view_op<&unsqueeze_kernel>("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)",
                               view_derivative(&restore_shape_backward),
                               &ViewRule<Unsqueeze>::call),
    copy_op<&unsqueeze_kernel, Unsqueeze>("unsqueeze_copy(Tensor self, int dim) -> Tensor",
                                          view_derivative(&restore_shape_backward)),
    view_op<&squeeze_kernel>("squeeze(Tensor(a) self) -> Tensor(a)",
                             view_derivative(&restore_shape_backward), &ViewRule<Squeeze>::call),
    copy_op<&squeeze_kernel, Squeeze>("squeeze_copy(Tensor self) -> Tensor",
                                      view_derivative(&restore_shape_backward)),
    view_op<&squeeze_dim_kernel>("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",
                                 view_derivative(&restore_shape_backward),
                                 &ViewRule<SqueezeDim>::call),
    copy_op<&squeeze_dim_kernel, SqueezeDim>("squeeze_copy.dim(Tensor self, int dim) -> Tensor",
                                             view_derivative(&restore_shape_backward)),
    view_op<&expand_kernel>("expand(Tensor(a) self, int[] size) -> Tensor(a)",
                            view_derivative(&expand_backward), &ViewRule<Expand>::call),
    copy_op<&expand_kernel, Expand>("expand_copy(Tensor self, int[] size) -> Tensor",
                                    view_derivative(&expand_backward)),
    {.schema = "stop_gradient(Tensor(a) self) -> Tensor(a)",
     .all_backends = &stop_gradient_kernel,
     .derivative = {autograd::non_differentiable(), kConstant},
     .batching = &stop_gradient_batched,
     .shape = &shape_detail::view_shape<&stop_gradient_kernel>,
     .flops = &flops::zero},
    {.schema = "stop_gradient_copy(Tensor self) -> Tensor",
     .all_backends = &stop_gradient_copy_kernel,
     .derivative = {autograd::non_differentiable(), kConstant},
     .batching = &stop_gradient_copy_batched,
     .shape = &shape_detail::copy_shape<&stop_gradient_kernel>,
     .flops = &flops::zero},
    {.schema = "flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
     .decomposition = &flatten_composite},
    {.schema = "unflatten.int(Tensor(a) self, int dim, int[] sizes) -> Tensor(a)",
     .decomposition = &unflatten_composite},
});

}  // namespace

Tensor stop_gradient(const Tensor& t) {
  return STRATA_OP("strata::stop_gradient", "", Tensor(const Tensor&)).call(t);
}

Tensor Tensor::view(IntArrayRef sizes) const {
  return STRATA_OP("strata::view", "", Tensor(const Tensor&, IntArrayRef)).call(*this, sizes);
}

Tensor Tensor::reshape(IntArrayRef sizes) const {
  return STRATA_OP("strata::reshape", "", Tensor(const Tensor&, IntArrayRef)).call(*this, sizes);
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

}  // namespace strata
