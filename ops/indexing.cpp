// Indexing operators that read: index_select and gather (the scatters are in
// indexing_scatter.cpp, masked_fill in masked_fill.cpp; indexing_internal.h says
// what they share).
#include "kernels/cpu/indexing.h"

#include <utility>

#include "dispatcher/op_def.h"
#include "kernels/cuda/indexing.h"
#include "ops/device_choice.h"
#include "ops/indexing_internal.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"

namespace strata {
namespace {

using indexing_detail::BatchedCall;
using indexing_detail::check_index_list;
using indexing_detail::check_index_tensor;
using indexing_detail::check_index_values;
using indexing_detail::check_index_within;

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

// self with the indexed dim resized to the number of indices.
DimVector index_select_sizes(const Tensor& self, int64_t d, const Tensor& index) {
  DimVector sizes(self.sizes());
  if (self.dim() > 0) sizes[d] = index.numel();
  return sizes;
}

Tensor index_select_cpu(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "strata::index_select";
  const int64_t d = check_index_select(self, dim, index, op);
  Tensor out =
      make_empty_tensor(index_select_sizes(self, d, index), self.dtype(), self.device(), op);
  // The kernel checks indices as it reads them; with nothing to read, check them here.
  if (out.numel() == 0) check_index_values(self, d, index, op);
  (on_device::any_cuda(out, self, index) ? gpu::index_select_kernel : cpu::index_select_kernel)(
      out, self, d, index);
  return out;
}

Tensor gather_cpu(const Tensor& self, int64_t dim, const Tensor& index) {
  const char* op = "strata::gather";
  const int64_t d = check_gather(self, dim, index, op);
  Tensor out = make_empty_tensor(index.sizes(), self.dtype(), self.device(), op);
  (on_device::any_cuda(out, self, index) ? gpu::gather_kernel : cpu::gather_kernel)(out, self, d,
                                                                                    index);
  return out;
}

// ---- derivatives (indexing_internal.h) ----

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;

// Zeros of argument `arg`'s shape, for a gradient to be accumulated into.
Tensor zeros_for(const BackwardContext& c, size_t arg) {
  return zeros(c.input_sizes(arg), c.grad().dtype(), c.grad().device());
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

// ---- batching rules (indexing_internal.h) ----

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

// ---- the rows (Note [One op, one place]) ----

// Shape functions: the op's own checks of the arguments' metadata, then the
// output's sizes as the kernel computes them.
MetaList index_select_meta(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  const Tensor& index = shape::tensor_arg(args, 2);
  const int64_t d = check_index_select(self, args[1].to_int(), index, "strata::index_select");
  return shape::single(index_select_sizes(self, d, index), self.dtype());
}

MetaList gather_meta(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  const Tensor& index = shape::tensor_arg(args, 2);
  check_gather(self, args[1].to_int(), index, "strata::gather");
  return shape::single(index.sizes(), self.dtype());
}

// index_select and gather only move elements: zero FLOPs by definition. Both are
// linear in self, their only floating tensor argument.
const OpFamily kIndexingOps("indexing", {
    {.schema = "index_select(Tensor self, int dim, Tensor index) -> Tensor",
     .cpu = &index_select_cpu,
     .cuda = &index_select_cpu,
     .derivative = derivative({.backward = &index_select_backward,
                               .forward = &autograd::linear_forward,
                               .saved_inputs = args(2)}),
     .batching = &index_select_batched,
     .shape = &index_select_meta,
     .flops = &flops::zero},
    {.schema = "gather(Tensor self, int dim, Tensor index) -> Tensor",
     .cpu = &gather_cpu,
     .cuda = &gather_cpu,
     .derivative = derivative({.backward = &gather_backward,
                               .forward = &autograd::linear_forward,
                               .saved_inputs = args(2)}),
     .batching = &gather_batched,
     .shape = &gather_meta,
     .flops = &flops::zero},
});

using IndexSig = Tensor(const Tensor&, int64_t, const Tensor&);

}  // namespace

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return STRATA_OP("strata::index_select", "", IndexSig).call(*this, dim, index);
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return STRATA_OP("strata::gather", "", IndexSig).call(*this, dim, index);
}

}  // namespace strata
