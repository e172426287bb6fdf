// Indexing operators that write: scatter_add(_) and index_add(_), the adjoints of
// gather and index_select (indexing.cpp; indexing_internal.h says what they
// share).
#include <optional>
#include <type_traits>
#include <utility>

#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/indexing.h"
#include "kernels/cuda/indexing.h"
#include "ops/device_choice.h"
#include "ops/elementwise_kernels.h"
#include "ops/indexing_internal.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/overlap.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"

namespace strata {
namespace {

using batching::BatchedArg;
using indexing_detail::BatchedCall;
using indexing_detail::check_index_list;
using indexing_detail::check_index_tensor;
using indexing_detail::check_index_values;
using indexing_detail::check_index_within;
using indexing_detail::size_at;

void check_same_dtype(const Tensor& self, const Tensor& values, const char* name, const char* op) {
  STRATA_CHECK(values.dtype() == self.dtype(), op, name, " has dtype ", values.dtype(),
               " but self has dtype ", self.dtype());
  STRATA_CHECK(values.device() == self.device(), op, name, " is on ", values.device(),
               " but self is on ", self.device());
}

// A contiguous copy of self for the out-of-place scatters to accumulate into.
Tensor copy_of(const Tensor& self, const char* op) {
  Tensor out = make_empty_tensor(self.sizes(), self.dtype(), self.device(), op);
  on_device::copy_kernel(out, self);
  return out;
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

Tensor scatter_add_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const char* op = "strata::scatter_add";
  const int64_t d = check_scatter_add(self, dim, index, src, op);
  check_index_values(self, d, index, op);
  Tensor out = copy_of(self, op);
  (on_device::any_cuda(out, index, src) ? gpu::scatter_add_kernel : cpu::scatter_add_kernel)(
      out, d, index, src);
  return out;
}

// An in-place scatter writes each element of self alone, reading neither the
// index nor the values from self's memory.
void check_written_alone(const Tensor& self, const Tensor& index, const Tensor& values,
                         const char* op) {
  check_no_internal_overlap(self, op);
  check_no_overlap(self, index, op);
  check_no_overlap(self, values, op);
}

const Tensor& scatter_add__cpu(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src) {
  const char* op = "strata::scatter_add_";
  const int64_t d = check_scatter_add(self, dim, index, src, op);
  check_index_values(self, d, index, op);
  check_written_alone(self, index, src, op);
  (on_device::any_cuda(self, index, src) ? gpu::scatter_add_kernel : cpu::scatter_add_kernel)(
      self, d, index, src);
  self.impl()->bump_version();
  return self;
}

Tensor index_add_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                     const Scalar& alpha) {
  const char* op = "strata::index_add";
  const int64_t d = check_index_add(self, dim, index, source, alpha, op);
  check_index_values(self, d, index, op);
  Tensor out = copy_of(self, op);
  (on_device::any_cuda(out, index, source) ? gpu::index_add_kernel : cpu::index_add_kernel)(
      out, d, index, source, alpha);
  return out;
}

const Tensor& index_add__cpu(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& source, const Scalar& alpha) {
  const char* op = "strata::index_add_";
  const int64_t d = check_index_add(self, dim, index, source, alpha, op);
  check_index_values(self, d, index, op);
  check_written_alone(self, index, source, op);
  (on_device::any_cuda(self, index, source) ? gpu::index_add_kernel : cpu::index_add_kernel)(
      self, d, index, source, alpha);
  self.impl()->bump_version();
  return self;
}

// ---- derivatives (indexing_internal.h) ----

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

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

// ---- batching rules (indexing_internal.h) ----

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

// ---- the rows (Note [One op, one place]) ----

// Shape functions: the op's own checks of the arguments' metadata; the result
// has self's shape.
template <bool in_place>
MetaList scatter_add_meta(OpArgs args) {
  check_scatter_add(shape::tensor_arg(args, 0), args[1].to_int(), shape::tensor_arg(args, 2),
                    shape::tensor_arg(args, 3),
                    in_place ? "strata::scatter_add_" : "strata::scatter_add");
  return shape::same_as_self(args);
}

template <bool in_place>
MetaList index_add_meta(OpArgs args) {
  check_index_add(shape::tensor_arg(args, 0), args[1].to_int(), shape::tensor_arg(args, 2),
                  shape::tensor_arg(args, 3), args[4].to_scalar(),
                  in_place ? "strata::index_add_" : "strata::index_add");
  return shape::same_as_self(args);
}

// The scatters count one FLOP per element they add into self: scatter_add adds
// the elements of src that index reaches (one per index element), index_add
// every element of source (alpha's scale not counted, as in add.Tensor).
int64_t scatter_add_flops(OpArgs args, const MetaList&) {
  return shape::tensor_arg(args, 2).numel();
}
int64_t index_add_flops(OpArgs args, const MetaList&) { return shape::tensor_arg(args, 3).numel(); }

KernelFunction scatter_add_derivative() {
  return derivative({.backward = &scatter_add_backward,
                     .forward = &scatter_add_forward,
                     .saved_inputs = args(2)});
}
KernelFunction index_add_derivative() {
  return derivative(
      {.backward = &index_add_backward, .forward = &index_add_forward, .saved_inputs = args(2)});
}

const OpFamily kScatterOps("indexing_scatter", {
    {.schema = "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
     .cpu = &scatter_add_cpu,
     .cuda = &scatter_add_cpu,
     .derivative = scatter_add_derivative(),
     .batching = &scatter_add_batched<false>,
     .shape = &scatter_add_meta<false>,
     .flops = &scatter_add_flops},
    {.schema = "scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)",
     .cpu = &scatter_add__cpu,
     .cuda = &scatter_add__cpu,
     .derivative = scatter_add_derivative(),
     .batching = &scatter_add_batched<true>,
     .shape = &scatter_add_meta<true>,
     .flops = &scatter_add_flops},
    {.schema = "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> "
               "Tensor",
     .cpu = &index_add_cpu,
     .cuda = &index_add_cpu,
     .derivative = index_add_derivative(),
     .batching = &index_add_batched<false>,
     .shape = &index_add_meta<false>,
     .flops = &index_add_flops},
    {.schema = "index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, "
               "Scalar alpha=1) -> Tensor(a!)",
     .cpu = &index_add__cpu,
     .cuda = &index_add__cpu,
     .derivative = index_add_derivative(),
     .batching = &index_add_batched<true>,
     .shape = &index_add_meta<true>,
     .flops = &index_add_flops},
});

using ScatterSig = Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&);
using ScatterInplaceSig = const Tensor&(const Tensor&, int64_t, const Tensor&, const Tensor&);
using IndexAddSig = Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&);
using IndexAddInplaceSig = const Tensor&(const Tensor&, int64_t, const Tensor&, const Tensor&,
                                         const Scalar&);

}  // namespace

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
