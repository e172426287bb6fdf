// Indexing operators: index_select, gather, scatter_add(_) and index_add(_)
// (masked_fill is in masked_fill.cpp). Index tensors are Int64; every index is checked against the
// size of the dim it indexes.
#include "kernels/cpu/indexing.h"

#include <optional>
#include <type_traits>
#include <utility>

#include "dispatcher/library.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "kernels/cpu/elementwise.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

// A 0-dim tensor counts as one element along dim 0.
int64_t size_at(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.sizes()[dim]; }

void check_index_tensor(const Tensor& self, const Tensor& index, const char* op) {
  STRATA_CHECK(index.dtype() == kInt64, op, "index must be an Int64 tensor, got ", index.dtype(),
               " (shape ", shape_string(index.sizes()), ")");
  STRATA_CHECK(index.device() == self.device(), op, "index is on ", index.device(),
               " but self is on ", self.device());
}

// index_select and index_add take a list of positions along one dim.
void check_index_list(const Tensor& self, const Tensor& index, const char* op) {
  check_index_tensor(self, index, op);
  STRATA_CHECK(index.dim() <= 1, op, "index must be 0-dim or 1-D, got shape ",
               shape_string(index.sizes()));
}

// gather and scatter_add: index has other's rank and fits inside it, except along
// `free_dim` (the indexed dim of self) when given.
void check_index_within(const Tensor& index, const Tensor& other, const char* other_name,
                        std::optional<int64_t> free_dim, const char* op) {
  STRATA_CHECK(index.dim() == other.dim(), op, "index of shape ", shape_string(index.sizes()),
               " must have as many dims as ", other_name, " of shape ",
               shape_string(other.sizes()));
  for (int64_t k = 0; k < index.dim(); ++k) {
    STRATA_CHECK(k == free_dim || index.sizes()[k] <= other.sizes()[k], op, "index of shape ",
                 shape_string(index.sizes()), " is larger than ", other_name, " of shape ",
                 shape_string(other.sizes()), " at dim ", k);
  }
}

void check_same_dtype(const Tensor& self, const Tensor& values, const char* name, const char* op) {
  STRATA_CHECK(values.dtype() == self.dtype(), op, name, " has dtype ", values.dtype(),
               " but self has dtype ", self.dtype());
  STRATA_CHECK(values.device() == self.device(), op, name, " is on ", values.device(),
               " but self is on ", self.device());
}

// A contiguous copy of self for the out-of-place scatters to accumulate into.
Tensor copy_of(const Tensor& self, const char* op) {
  Tensor out = make_empty_tensor(self.sizes(), self.dtype(), self.device(), op);
  cpu::copy_kernel(out, self);
  return out;
}

// The checks of index_select, gather, scatter_add and index_add read only shapes
// and dtypes (the batching rules run them on one sample's) and return dim wrapped;
// the index values are checked by the kernels.

int64_t check_index_select(const Tensor& self, int64_t dim, const Tensor& index, const char* op) {
  check_index_list(self, index, op);
  STRATA_CHECK(self.dim() > 0 || index.numel() == 1, op,
               "indexing a 0-dim tensor takes exactly one index, got ", index.numel());
  return wrap_dim(dim, self.dim(), op);
}

int64_t check_gather(const Tensor& self, int64_t dim, const Tensor& index, const char* op) {
  check_index_tensor(self, index, op);
  const int64_t d = wrap_dim(dim, self.dim(), op);
  check_index_within(index, self, "self", d, op);
  return d;
}

int64_t check_scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          const char* op) {
  check_index_tensor(self, index, op);
  check_same_dtype(self, src, "src", op);
  const int64_t d = wrap_dim(dim, self.dim(), op);
  check_index_within(index, self, "self", d, op);
  check_index_within(index, src, "src", std::nullopt, op);
  return d;
}

int64_t check_index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                        const Scalar& alpha, const char* op) {
  check_index_list(self, index, op);
  check_same_dtype(self, source, "source", op);
  STRATA_CHECK(is_floating_point(self.dtype()) || !alpha.is_floating_point(), op, "alpha ", alpha,
               " is a floating-point number but self has dtype ", self.dtype());
  const int64_t d = wrap_dim(dim, self.dim(), op);
  bool fits = source.dim() == self.dim() && size_at(source, d) == index.numel();
  for (int64_t k = 0; fits && k < self.dim(); ++k) {
    fits = k == d || source.sizes()[k] == self.sizes()[k];
  }
  STRATA_CHECK(fits, op, "source of shape ", shape_string(source.sizes()),
               " must match self of shape ", shape_string(self.sizes()), " except at dim ", d,
               ", where its size must be the number of indices (", index.numel(), ")");
  return d;
}

// The index values against the size of the indexed dim: scatters write into
// existing data, so they check before they start.
void check_index_values(const Tensor& self, int64_t d, const Tensor& index, const char* op) {
  cpu::check_index_range(index, size_at(self, d), d, op);
}

Tensor index_select_cpu(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "strata::index_select";
  const int64_t d = check_index_select(self, dim, index, op);
  DimVector shape(self.sizes());
  if (self.dim() > 0) shape[d] = index.numel();
  Tensor out = make_empty_tensor(shape, self.dtype(), self.device(), op);
  // The kernel checks indices as it reads them; with nothing to read, check them here.
  if (out.numel() == 0) check_index_values(self, d, index, op);
  cpu::index_select_kernel(out, self, d, index);
  return out;
}

Tensor gather_cpu(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "strata::gather";
  const int64_t d = check_gather(self, dim, index, op);
  Tensor out = make_empty_tensor(index.sizes(), self.dtype(), self.device(), op);
  cpu::gather_kernel(out, self, d, index);
  return out;
}

Tensor scatter_add_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const char* op = "strata::scatter_add";
  const int64_t d = check_scatter_add(self, dim, index, src, op);
  check_index_values(self, d, index, op);
  Tensor out = copy_of(self, op);
  cpu::scatter_add_kernel(out, d, index, src);
  return out;
}

const Tensor& scatter_add__cpu(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src) {
  const char* op = "strata::scatter_add_";
  const int64_t d = check_scatter_add(self, dim, index, src, op);
  check_index_values(self, d, index, op);
  cpu::scatter_add_kernel(self, d, index, src);
  self.impl()->bump_version();
  return self;
}

Tensor index_add_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                     const Scalar& alpha) {
  const char* op = "strata::index_add";
  const int64_t d = check_index_add(self, dim, index, source, alpha, op);
  check_index_values(self, d, index, op);
  Tensor out = copy_of(self, op);
  cpu::index_add_kernel(out, d, index, source, alpha);
  return out;
}

const Tensor& index_add__cpu(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& source, const Scalar& alpha) {
  const char* op = "strata::index_add_";
  const int64_t d = check_index_add(self, dim, index, source, alpha, op);
  check_index_values(self, d, index, op);
  cpu::index_add_kernel(self, d, index, source, alpha);
  self.impl()->bump_version();
  return self;
}

STRATA_LIBRARY(strata, m) {
  m.def("index_select(Tensor self, int dim, Tensor index) -> Tensor");
  m.def("gather(Tensor self, int dim, Tensor index) -> Tensor");
  m.def("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor");
  m.def("scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)");
  m.def(
      "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> "
      "Tensor");
  m.def(
      "index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> "
      "Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("index_select", &index_select_cpu);
  m.impl("gather", &gather_cpu);
  m.impl("scatter_add", &scatter_add_cpu);
  m.impl("scatter_add_", &scatter_add__cpu);
  m.impl("index_add", &index_add_cpu);
  m.impl("index_add_", &index_add__cpu);
}

// ---- derivatives (Note [Derivative formulas]) -----------------------------------
// Index and mask arguments are integer or Bool: they never get a gradient. Each
// formula is linear in the output gradient and built from the indexing ops
// themselves (index_select and index_add, gather and scatter_add are each other's
// adjoints), so grad of grad stays within this file's formulas.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

// Zeros of argument `arg`'s shape, for a gradient to be accumulated into.
Tensor zeros_for(const BackwardContext& c, size_t arg) {
  return zeros(c.input_sizes(arg), c.grad().dtype(), c.grad().device());
}

// t extended with zeros at the end of each dim to `sizes`: the elements of src
// that no index reads get a zero gradient.
Tensor zero_padded(Tensor t, IntArrayRef sizes) {
  for (int64_t k = 0; k < t.dim(); ++k) {
    const int64_t missing = sizes[k] - t.sizes()[k];
    if (missing == 0) continue;
    DimVector pad_sizes(t.sizes());
    pad_sizes[k] = missing;
    t = cat({t, zeros(pad_sizes, t.dtype(), t.device())}, k);
  }
  return t;
}

// index_select(self, dim, index): each selected slice adds its gradient back to
// the slice it came from, repeats accumulating.
void index_select_backward(BackwardContext& c) {
  c.set_grad(0, zeros_for(c, 0).index_add(c.int_arg(1), c.input(2), c.grad()));
}

// gather(self, dim, index): the same, element by element.
void gather_backward(BackwardContext& c) {
  c.set_grad(0, zeros_for(c, 0).scatter_add(c.int_arg(1), c.input(2), c.grad()));
}

// scatter_add(self, dim, index, src): self passes through; src[p] was added at
// index[p], so it reads its gradient from there. Its tangent is added the same
// way (the in-place form's too, out of place).
void scatter_add_backward(BackwardContext& c) {
  c.set_grad(0, c.grad());
  if (c.needs_grad(3)) {
    c.set_grad(3, zero_padded(c.grad().gather(c.int_arg(1), c.input(2)), c.input_sizes(3)));
  }
}
void scatter_add_forward(ForwardContext& c) {
  c.set_tangent(0, !c.has_tangent(3)
                       ? c.tangent(0)
                       : c.tangent_or_zeros(0).scatter_add(c.int_arg(1), c.input(2), c.tangent(3)));
}

// index_add(self, dim, index, source, *, alpha): as scatter_add, scaled by alpha.
void index_add_backward(BackwardContext& c) {
  c.set_grad(0, c.grad());
  if (c.needs_grad(3)) {
    c.set_grad(3, c.grad().index_select(c.int_arg(1), c.input(2)) * c.scalar_arg(4));
  }
}
void index_add_forward(ForwardContext& c) {
  c.set_tangent(0, !c.has_tangent(3)
                       ? c.tangent(0)
                       : c.tangent_or_zeros(0).index_add(c.int_arg(1), c.input(2), c.tangent(3),
                                                         c.scalar_arg(4)));
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  const KernelFunction scatter_add = derivative({.backward = &scatter_add_backward,
                                                 .forward = &scatter_add_forward,
                                                 .saved_inputs = args(2)});
  const KernelFunction index_add = derivative(
      {.backward = &index_add_backward, .forward = &index_add_forward, .saved_inputs = args(2)});
  // Linear in self, their only floating tensor argument.
  m.impl("index_select", derivative({.backward = &index_select_backward,
                                     .forward = &autograd::linear_forward,
                                     .saved_inputs = args(2)}));
  m.impl("gather", derivative({.backward = &gather_backward,
                               .forward = &autograd::linear_forward,
                               .saved_inputs = args(2)}));
  m.impl("scatter_add", scatter_add);
  m.impl("scatter_add_", scatter_add);
  m.impl("index_add", index_add);
  m.impl("index_add_", index_add);
}

// ---- batching rules (Note [Batching rules]) ------------------------------------
// A rule checks one sample's shapes with the op's own checks (a batched tensor's
// sizes are a sample's), then indexes the whole batch behind a leading batch dim;
// an argument that is the same for every sample is expanded to the batch (a
// view). A batched list of positions (index_select, index_add) becomes the index
// of gather or scatter_add, which has the data's rank, so every sample reads or
// writes at its own positions.

using batching::BatchedArg;

// A rule's view of its call: the vmap level, and the guard that sends the ops
// the rule calls on values (never batched at this level) straight to the layers
// below instead of back to this level's rules.
struct BatchedCall {
  const char* op;
  batching::VmapLevel at;
  ExcludeDispatchKeyGuard below{DispatchKey::Batched};

  explicit BatchedCall(const char* name) : op(name), at(batching::current_vmap_level(name)) {}
  BatchedArg unwrap(const Tensor& t) const { return batching::unwrap(t, at.level); }

  // Every sample of `t`, batch first. The kernels count a 0-dim tensor as one
  // element along dim 0, so a 0-dim sample becomes [1], keeping the batch dim out
  // of the indexing.
  Tensor samples_of(const Tensor& t) const {
    const BatchedArg arg = unwrap(t);
    Tensor batch = batching::batch_first_expanded(arg, at.batch_size);
    return arg.logical_dim() == 0 ? batch.unsqueeze(1) : batch;
  }
  // A batched list of positions along `dim` of `data` (from samples_of) as an
  // index shaped like data, with the number of positions at dim.
  Tensor positions_index(const Tensor& index, const Tensor& data, int64_t dim) const {
    const Tensor positions = samples_of(index);
    DimVector shape(static_cast<size_t>(data.dim()), 1);
    shape[0] = at.batch_size;
    shape[dim] = positions.sizes()[1];
    DimVector sizes(data.sizes());
    sizes[dim] = positions.sizes()[1];
    return positions.view(shape).expand(sizes);
  }
  // The result of an out-of-place op from the batch it computed from samples_of
  // of a self with `self_rank` dims per sample.
  Tensor result(Tensor out, int64_t self_rank) const {
    return batching::make_batched(self_rank == 0 ? out.squeeze(1) : std::move(out), 0, at.level);
  }
};

Tensor index_select_batched(const Tensor& self, int64_t dim, const Tensor& index) {
  const BatchedCall call("strata::index_select");
  const bool batched_positions = call.unwrap(index).batched();
  if (!call.unwrap(self).batched() && !batched_positions) return self.index_select(dim, index);
  const int64_t d = check_index_select(self, dim, index, call.op) + 1;
  const Tensor data = call.samples_of(self);
  return call.result(batched_positions ? data.gather(d, call.positions_index(index, data, d))
                                       : data.index_select(d, index),
                     self.dim());
}

Tensor gather_batched(const Tensor& self, int64_t dim, const Tensor& index) {
  const BatchedCall call("strata::gather");
  if (!call.unwrap(self).batched() && !call.unwrap(index).batched()) {
    return self.gather(dim, index);
  }
  const int64_t d = check_gather(self, dim, index, call.op) + 1;
  return call.result(call.samples_of(self).gather(d, call.samples_of(index)), self.dim());
}

// An in-place rule returns its self, whose value it wrote into.
template <bool in_place>
using ScatterResult = std::conditional_t<in_place, const Tensor&, Tensor>;

// The out-of-place or in-place op of a pair, called on `data`.
template <bool in_place>
ScatterResult<in_place> scatter_add_into(const Tensor& data, int64_t d, const Tensor& index,
                                         const Tensor& src) {
  if constexpr (in_place) {
    return data.scatter_add_(d, index, src);
  } else {
    return data.scatter_add(d, index, src);
  }
}

template <bool in_place>
ScatterResult<in_place> index_add_into(const Tensor& data, int64_t d, const Tensor& index,
                                       const Tensor& source, const Scalar& alpha) {
  if constexpr (in_place) {
    return data.index_add_(d, index, source, alpha);
  } else {
    return data.index_add(d, index, source, alpha);
  }
}

template <bool in_place>
ScatterResult<in_place> scatter_result(const BatchedCall& call, const Tensor& self, Tensor out) {
  if constexpr (in_place) {
    return self;
  } else {
    return call.result(std::move(out), self.dim());
  }
}

// Whether a scatter into self has anything batched at this level; for an in-place
// one, checks that self can take the batched values.
template <bool in_place>
bool scatter_batched(const BatchedCall& call, const Tensor& self, const Tensor& index,
                     const Tensor& src) {
  const BatchedArg target = call.unwrap(self);
  const bool others = call.unwrap(index).batched() || call.unwrap(src).batched();
  if (in_place) batching::check_inplace_target(call.op, target, others, call.at.batch_size);
  return target.batched() || others;
}

template <bool in_place>
ScatterResult<in_place> scatter_add_batched(const Tensor& self, int64_t dim, const Tensor& index,
                                            const Tensor& src) {
  const BatchedCall call(in_place ? "strata::scatter_add_" : "strata::scatter_add");
  if (!scatter_batched<in_place>(call, self, index, src)) {
    return scatter_add_into<in_place>(self, dim, index, src);
  }
  const int64_t d = check_scatter_add(self, dim, index, src, call.op) + 1;
  const Tensor out = scatter_add_into<in_place>(call.samples_of(self), d, call.samples_of(index),
                                                call.samples_of(src));
  return scatter_result<in_place>(call, self, out);
}

// alpha * values in values' dtype (the scale index_add's kernel applies).
Tensor scaled(const Tensor& values, const Scalar& alpha) {
  if (alpha.to_double() == 1.0) return values;
  return (values * alpha).to(values.dtype());
}

template <bool in_place>
ScatterResult<in_place> index_add_batched(const Tensor& self, int64_t dim, const Tensor& index,
                                          const Tensor& source, const Scalar& alpha) {
  const BatchedCall call(in_place ? "strata::index_add_" : "strata::index_add");
  if (!scatter_batched<in_place>(call, self, index, source)) {
    return index_add_into<in_place>(self, dim, index, source, alpha);
  }
  const int64_t d = check_index_add(self, dim, index, source, alpha, call.op) + 1;
  const Tensor data = call.samples_of(self);
  const Tensor values = call.samples_of(source);
  const Tensor out =
      call.unwrap(index).batched()
          ? scatter_add_into<in_place>(data, d, call.positions_index(index, values, d),
                                       scaled(values, alpha))
          : index_add_into<in_place>(data, d, index, values, alpha);
  return scatter_result<in_place>(call, self, out);
}

STRATA_LIBRARY_IMPL(strata, Batched, m) {
  m.impl("index_select", &index_select_batched);
  m.impl("gather", &gather_batched);
  m.impl("scatter_add", &scatter_add_batched<false>);
  m.impl("scatter_add_", &scatter_add_batched<true>);
  m.impl("index_add", &index_add_batched<false>);
  m.impl("index_add_", &index_add_batched<true>);
}

using IndexSig = Tensor(const Tensor&, int64_t, const Tensor&);
using ScatterSig = Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&);
using ScatterInplaceSig = const Tensor&(const Tensor&, int64_t, const Tensor&, const Tensor&);
using IndexAddSig = Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&);
using IndexAddInplaceSig = const Tensor&(const Tensor&, int64_t, const Tensor&, const Tensor&,
                                         const Scalar&);

}  // namespace

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return STRATA_OP("strata::index_select", "", IndexSig).call(*this, dim, index);
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return STRATA_OP("strata::gather", "", IndexSig).call(*this, dim, index);
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return STRATA_OP("strata::scatter_add", "", ScatterSig).call(*this, dim, index, src);
}

const Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  return STRATA_OP("strata::scatter_add_", "", ScatterInplaceSig).call(*this, dim, index, src);
}

Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) const {
  return STRATA_OP("strata::index_add", "", IndexAddSig).call(*this, dim, index, source, alpha);
}

const Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                                 const Scalar& alpha) const {
  return STRATA_OP("strata::index_add_", "", IndexAddInplaceSig)
      .call(*this, dim, index, source, alpha);
}

}  // namespace strata
