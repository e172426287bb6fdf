// Joins: cat (a CPU kernel) and stack (unsqueeze + cat).
#include <vector>

#include "dispatcher/local_dispatch_key_set.h"
#include "dispatcher/op_def.h"
#include "kernels/cpu/cat.h"
#include "kernels/cuda/indexing.h"
#include "ops/device_choice.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "ops/shape_internal.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

// Like PyTorch, cat skips 1-D tensors of shape [0] in its shape checks, so an
// empty accumulator can start a concatenation of tensors of any rank. They still
// take part in type promotion: the result dtype is result_type of all inputs.
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; }

void check_non_empty(ArrayRef<Tensor> tensors, const char* op) {
  STRATA_CHECK(!tensors.empty(), op, "expected a non-empty list of tensors");
}

// The cat dim, wrapped, and the output's shape; `tensors` may be the samples of
// batched tensors (the batching rule checks one sample's shapes).
struct CatShape {
  int64_t dim;
  DimVector sizes;
};

CatShape cat_shape(ArrayRef<Tensor> tensors, int64_t dim, const char* op) {
  check_non_empty(tensors, op);
  size_t ref = 0;  // the tensor whose shape the others must match
  while (ref + 1 < tensors.size() && is_legacy_empty(tensors[ref])) ++ref;
  const Tensor& first = tensors[ref];
  for (size_t i = 0; i < tensors.size(); ++i) {
    STRATA_CHECK(tensors[i].dim() > 0, op, "the 0-dim tensor at position ", i,
                 " cannot be concatenated; unsqueeze it, or use stack");
    STRATA_CHECK(tensors[i].device() == first.device(), op, "the tensor at position ", i, " is on ",
                 tensors[i].device(), " but the one at position ", ref, " is on ", first.device());
  }
  const int64_t d = wrap_dim(dim, first.dim(), op);
  DimVector shape(first.sizes());
  shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (is_legacy_empty(t)) continue;
    bool same = t.dim() == first.dim();
    for (int64_t k = 0; same && k < t.dim(); ++k) same = k == d || t.sizes()[k] == first.sizes()[k];
    STRATA_CHECK(same, op, "the tensor at position ", i, " has shape ", shape_string(t.sizes()),
                 " but the tensor at position ", ref, " has shape ", shape_string(first.sizes()),
                 ": sizes must match except in the cat dim ", d);
    shape[d] += t.sizes()[d];
  }
  return {d, shape};
}

Tensor cat_cpu(ArrayRef<Tensor> tensors, int64_t dim) {
  const char* op = "strata::cat";
  const CatShape shape = cat_shape(tensors, dim, op);
  Tensor out = make_empty_tensor(shape.sizes, result_type(tensors), tensors[0].device(), op);
  (on_device::any_cuda(out, tensors) ? gpu::cat_kernel : cpu::cat_kernel)(out, tensors, shape.dim);
  return out;
}

Tensor stack_composite(ArrayRef<Tensor> tensors, int64_t dim) {
  const char* op = "strata::stack";
  check_non_empty(tensors, op);
  for (size_t i = 1; i < tensors.size(); ++i) {
    STRATA_CHECK(tensors[i].sizes() == tensors[0].sizes(), op,
                 "all tensors must have the same shape, but the tensor at position 0 has shape ",
                 shape_string(tensors[0].sizes()), " and the one at position ", i, " has shape ",
                 shape_string(tensors[i].sizes()));
  }
  const int64_t d = shape_detail::wrap_insert_dim(dim, tensors[0].dim(), op);
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (const Tensor& t : tensors) unsqueezed.push_back(t.unsqueeze(d));
  return cat(unsqueezed, d);
}

// ---- derivatives (Note [Derivative formulas]); stack differentiates through cat.

// Each input gets the part of the gradient it was concatenated into.
void cat_backward(autograd::BackwardContext& c) {
  const Tensor& g = c.grad();
  const int64_t d = c.int_arg(1) < 0 ? c.int_arg(1) + g.dim() : c.int_arg(1);
  int64_t start = 0;
  for (size_t i = 0; i < c.input_list_size(0); ++i) {
    const IntArrayRef sizes = c.input_sizes(0, i);
    if (static_cast<int64_t>(sizes.size()) != g.dim()) continue;  // a legacy empty tensor
    if (c.needs_grad(0, i)) c.set_list_grad(0, i, g.narrow(d, start, sizes[d]));
    start += sizes[d];
  }
}

// ---- batching rule (Note [Batching rules]); stack reaches it through unsqueeze.

// Every sample is the cat of the samples, so the batch is one cat along the
// sample's dim behind a leading batch dim; unbatched tensors are expanded to the
// batch (a view). A legacy empty tensor stays a 1-D [0] tensor, so the kernel
// still skips it in its shape checks and counts it in the dtype.
Tensor cat_batched(ArrayRef<Tensor> tensors, int64_t dim) {
  const char* op = "strata::cat";
  const batching::VmapLevel at = batching::current_vmap_level(op);
  const CatShape shape = cat_shape(tensors, dim, op);
  bool batched = false;
  for (const Tensor& t : tensors) {
    batched |= !is_legacy_empty(t) && batching::unwrap(t, at.level).batched();
  }
  // The ops below act on values, which are not batched at this level: they go
  // straight to the layers below instead of back to this level's rules.
  const ExcludeDispatchKeyGuard below(DispatchKey::Batched);
  std::vector<Tensor> values;
  values.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    const batching::BatchedArg arg = batching::unwrap(t, at.level);
    if (is_legacy_empty(t)) {
      values.push_back(arg.batched() ? empty({0}, t.dtype(), t.device()) : t);
    } else {
      values.push_back(batched ? batching::batch_first_expanded(arg, at.batch_size) : arg.value);
    }
  }
  if (!batched) return cat(values, shape.dim);
  return batching::make_batched(cat(values, shape.dim + 1), 0, at.level);
}

// ---- the rows (Note [One op, one place]) ----

// The cat of the tensors, in their promoted dtype.
MetaList cat_meta(OpArgs args) {
  const ArrayRef<Tensor> tensors = args[0].to_tensor_list();
  return shape::single(cat_shape(tensors, args[1].to_int(), "strata::cat").sizes,
                       result_type(tensors));
}

const OpFamily kJoinOps("shape_joins", {
    {.schema = "cat(Tensor[] tensors, int dim=0) -> Tensor",
     .cpu = &cat_cpu,
     .cuda = &cat_cpu,
     // Linear: the tangents joined as the values are (zeros for an input without
     // one, an integer input included).
     .derivative =
         autograd::derivative({.backward = &cat_backward, .forward = &autograd::linear_forward}),
     .batching = &cat_batched,
     .shape = &cat_meta,
     .flops = &flops::zero},
    {.schema = "stack(Tensor[] tensors, int dim=0) -> Tensor", .decomposition = &stack_composite},
});

}  // namespace

// An empty list has no tensor to pick a backend kernel: say so before dispatching.
Tensor cat(ArrayRef<Tensor> tensors, int64_t dim) {
  check_non_empty(tensors, "strata::cat");
  return STRATA_OP("strata::cat", "", Tensor(ArrayRef<Tensor>, int64_t)).call(tensors, dim);
}

Tensor stack(ArrayRef<Tensor> tensors, int64_t dim) {
  return STRATA_OP("strata::stack", "", Tensor(ArrayRef<Tensor>, int64_t)).call(tensors, dim);
}

}  // namespace strata
