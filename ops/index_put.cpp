// Advanced indexing as PyTorch defines it, over the leading dims (the Tensor
// methods at the bottom first rewrite slices, x[:, i], into that form:
// ops/index_slices.cpp): index
// (x[i0, i1, ...]), index_put(_) (x[i0, i1, ...] = v, or += with accumulate) and
// masked_select (x[mask] after broadcasting x and mask). Int64 indices broadcast
// together to the positions; a Bool mask stands for the Int64 indices of its true
// elements over the dims it covers. The result of index is the positions' shape
// followed by the dims no index covers. Loops in kernels/cpu/advanced_indexing.cpp.
//
// A Bool mask makes the number of positions depend on its values: the shape
// functions count them when the mask has data and otherwise (fake mode) throw,
// and the batching rules accept only a mask that is the same for every sample.
#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dispatcher/op_def.h"
#include "kernels/cpu/advanced_indexing.h"
#include "kernels/cuda/indexing.h"
#include "ops/elementwise_kernels.h"
#include "ops/index_put_internal.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/overlap.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using index_put_detail::broadcast_view;
using index_put_detail::check_indices;
using index_put_detail::contiguous_copy;
using index_put_detail::Indexing;
using index_put_detail::Indices;
using index_put_detail::index_with;
using index_put_detail::offsets_of;
using index_put_detail::offsets_on;
using index_put_detail::plan_indexing;
using index_put_detail::product;
using index_put_detail::true_positions;
using IndexSig = Tensor(const Tensor&, const Indices&);
using IndexPutSig = Tensor(const Tensor&, const Indices&, const Tensor&, bool);
using IndexPutInplaceSig = const Tensor&(const Tensor&, const Indices&, const Tensor&, bool);
using MaskedSelectSig = Tensor(const Tensor&, const Tensor&);

constexpr char kIndex[] = "strata::index";
constexpr char kIndexPut[] = "strata::index_put";
constexpr char kIndexPutInplace[] = "strata::index_put_";
constexpr char kMaskedSelect[] = "strata::masked_select";

Tensor index_any(const Tensor& self, const Indices& indices) {
  return index_with(self, plan_indexing(self, indices, kIndex), kIndex);
}

// Writes values (broadcast to the indexed result's shape) into `target`, a
// contiguous tensor of self's sizes.
void put_into(const Tensor& target, const Tensor& self, const Indices& indices,
              const Tensor& values, bool accumulate, const char* op) {
  STRATA_CHECK(values.dtype() == self.dtype(), op, "values have dtype ", values.dtype(),
               " but self has dtype ", self.dtype());
  STRATA_CHECK(values.device() == self.device(), op, "values are on ", values.device(),
               " but self is on ", self.device());
  const Indexing plan = plan_indexing(self, indices, op);
  const DimVector sizes = plan.result_sizes();
  bool fits = values.dim() <= static_cast<int64_t>(sizes.size());
  for (int64_t k = 1; fits && k <= values.dim(); ++k) {
    const int64_t from = values.sizes()[static_cast<size_t>(values.dim() - k)];
    fits = from == 1 || from == sizes[sizes.size() - static_cast<size_t>(k)];
  }
  STRATA_CHECK(fits, op, "values of shape ", shape_string(values.sizes()),
               " cannot be broadcast to the indexed shape ", shape_string(sizes));
  std::vector<int64_t> offsets = offsets_of(plan, self, op);
  const Tensor dense_values = contiguous_copy(values, sizes, self.dtype(), op);
  if (!target.device().is_cuda()) {
    return cpu::put_blocks(target, dense_values, offsets, product(plan.block), accumulate);
  }
  // The GPU writes blocks in parallel: of several writes to one block only the
  // last (the CPU's survivor) stays, the others marked -1 (skipped).
  if (!accumulate) {
    std::unordered_set<int64_t> written;
    for (size_t p = offsets.size(); p-- > 0;) {
      if (!written.insert(offsets[p]).second) offsets[p] = -1;
    }
  }
  gpu::put_blocks_kernel(target, dense_values, offsets_on(offsets, target.device(), op),
                         product(plan.block), accumulate);
}

Tensor index_put_any(const Tensor& self, const Indices& indices, const Tensor& values,
                     bool accumulate) {
  Tensor out = make_empty_tensor(self.sizes(), self.dtype(), self.device(), kIndexPut);
  on_device::copy_kernel(out, self);
  put_into(out, self, indices, values, accumulate, kIndexPut);
  return out;
}

const Tensor& index_put__any(const Tensor& self, const Indices& indices, const Tensor& values,
                             bool accumulate) {
  check_no_internal_overlap(self, kIndexPutInplace);
  check_no_overlap(self, values, kIndexPutInplace);
  const Tensor target = contiguous_copy(self, self.sizes(), self.dtype(), kIndexPutInplace);
  put_into(target, self, indices, values, accumulate, kIndexPutInplace);
  if (target.impl() != self.impl()) on_device::copy_kernel(self, target);
  self.impl()->bump_version();
  return self;
}

DimVector masked_select_sizes(IntArrayRef self_sizes, const Tensor& mask) {
  STRATA_CHECK(mask.dtype() == kBool, kMaskedSelect, "mask must be a Bool tensor, got ",
               mask.dtype(), " (shape ", shape_string(mask.sizes()), ")");
  return DimVector(broadcast_shapes(self_sizes, mask.sizes(), kMaskedSelect));
}

Tensor masked_select_any(const Tensor& self, const Tensor& mask) {
  const DimVector sizes = masked_select_sizes(self.sizes(), mask);
  const Tensor data = broadcast_view(self, sizes);
  const Tensor all = contiguous_copy(mask, sizes, kBool, kMaskedSelect);
  return index_with(data, plan_indexing(data, {all}, kMaskedSelect), kMaskedSelect);
}

// ---- derivatives (Note [Derivative formulas]) ----
// Every op here is linear in its floating tensors; indices and masks get no
// gradient. index and index_put are each other's adjoints, so grad of grad stays
// within this file.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

Tensor zero_scalar(const Tensor& like) { return zeros({}, like.dtype(), like.device()); }

// index reads each position's block: its gradient adds back there, repeats accumulating.
void index_backward(BackwardContext& c) {
  const Tensor zero = zeros(c.input_sizes(0), c.grad().dtype(), c.grad().device());
  c.set_grad(0, zero.index_put(c.input_list(1), c.grad(), true));
}

// index_put: self keeps its gradient where values replaced nothing (with
// accumulate: everywhere); values read theirs at the positions (summed back to
// their shape by the caller of the formula).
void index_put_backward(BackwardContext& c) {
  const Indices& indices = c.input_list(1);
  const Tensor& g = c.grad();
  if (c.needs_grad(0)) {
    c.set_grad(0, c.bool_arg(3) ? g : g.index_put(indices, zero_scalar(g), false));
  }
  if (c.needs_grad(2)) c.set_grad(2, g.index(indices));
}

void index_put_forward(ForwardContext& c) {
  const Indices& indices = c.input_list(1);
  const bool accumulate = c.bool_arg(3);
  if (c.has_tangent(2)) {
    return c.set_tangent(0, c.tangent_or_zeros(0).index_put(indices, c.tangent(2), accumulate));
  }
  const Tensor& t = c.tangent(0);
  c.set_tangent(0, accumulate ? t : t.index_put(indices, zero_scalar(t), false));
}

// Both read the tangent where they read self.
void index_forward(ForwardContext& c) {
  c.set_tangent(0, c.tangent(0).index(c.input_list(1)));
}
void masked_select_forward(ForwardContext& c) {
  c.set_tangent(0, c.tangent(0).masked_select(c.input(1)));
}

// masked_select is index by the mask broadcast with self.
void masked_select_backward(BackwardContext& c) {
  const Tensor& mask = c.input(1);
  const DimVector sizes(broadcast_shapes(c.input_sizes(0), mask.sizes(), kMaskedSelect));
  const Tensor zero = zeros(sizes, c.grad().dtype(), c.grad().device());
  c.set_grad(0, zero.index_put({mask.expand(sizes)}, c.grad(), true));
}

// ---- batching rules (Note [Batching rules]) ----
// The batch dim goes first in self and becomes one more indexed dim, indexed by
// arange(B) broadcast against the samples' indices (a batched index is batch
// first, padded to the indices' rank), so each sample reads and writes its own
// slice. A mask that is the same for every sample becomes its positions; one that
// differs per sample selects a different number of elements in each, which no
// batch can hold.

using batching::BatchedArg;

struct BatchedIndices {
  std::vector<BatchedArg> args;  // Int64, one per indexed dim of a sample
  int64_t rank = 0;              // of the samples' broadcast positions
  bool any_batched = false;

  BatchedIndices(const Indices& indices, int64_t level, const char* op) {
    for (const Tensor& index : indices) {
      BatchedArg arg = batching::unwrap(index, level);
      if (index.dtype() == kBool) {
        STRATA_CHECK(!arg.batched(), op, "a Bool index that differs per sample (shape ",
                     shape_string(index.sizes()), ", inside vmap) selects a different number "
                     "of elements in each sample: the output size is data-dependent and "
                     "cannot be batched; use where() with the mask instead");
        for (Tensor& positions : true_positions(arg.value, op)) {
          args.push_back({std::move(positions), std::nullopt});
        }
        continue;
      }
      args.push_back(std::move(arg));
    }
    for (const BatchedArg& arg : args) {
      rank = std::max(rank, arg.logical_dim());
      any_batched |= arg.batched();
    }
  }

  // The indices of a batch-first self: arange(B) for the batch dim, then each
  // sample's.
  Indices with_batch(int64_t batch_size, Device device) const {
    DimVector column(static_cast<size_t>(rank + 1), 1);
    column[0] = batch_size;
    Indices out{arange(batch_size, kInt64, device).view(column)};
    for (const BatchedArg& arg : args) {
      out.push_back(arg.batched() ? batching::batch_first_padded(arg, rank) : arg.value);
    }
    return out;
  }
};

// A batch-first value whose samples are 0-dim as [B, 1]: a 0-dim sample is indexed
// as one element along dim 0.
Tensor as_rows(const Tensor& batch, const BatchedArg& arg) {
  return arg.logical_dim() == 0 ? batch.unsqueeze(1) : batch;
}

Tensor index_batched(const Tensor& self, const Indices& indices) {
  const batching::VmapLevel at = batching::current_vmap_level(kIndex);
  const BatchedArg data = batching::unwrap(self, at.level);
  const BatchedIndices index(indices, at.level, kIndex);
  const batching::BelowThisLevel below;
  if (!data.batched() && !index.any_batched) return data.value.index(indices);
  const Tensor out = as_rows(batching::batch_first_expanded(data, at.batch_size), data)
                        .index(index.with_batch(at.batch_size, data.value.device()));
  return batching::make_batched(out, 0, at.level);
}

// index_put(_) at one level: the physical call, or none when nothing is batched.
// Values broadcast against [B, positions..., block...]: a batched one goes batch
// first, padded to that rank.
template <bool kInPlace>
std::optional<Tensor> index_put_physical(const Tensor& self, const Indices& indices,
                                         const Tensor& values, bool accumulate) {
  const char* op = kInPlace ? kIndexPutInplace : kIndexPut;
  const batching::VmapLevel at = batching::current_vmap_level(op);
  const BatchedArg data = batching::unwrap(self, at.level);
  const BatchedArg source = batching::unwrap(values, at.level);
  const BatchedIndices index(indices, at.level, op);
  const bool others = index.any_batched || source.batched();
  if (kInPlace) batching::check_inplace_target(op, data, others, at.batch_size);
  if (!data.batched() && !others) return std::nullopt;
  const batching::BelowThisLevel below;
  const int64_t block_rank =
      std::max<int64_t>(0, data.logical_dim() - static_cast<int64_t>(index.args.size()));
  const Tensor v =
      source.batched() ? batching::batch_first_padded(source, index.rank + block_rank)
                       : source.value;
  if constexpr (kInPlace) {
    as_rows(batching::batch_first(data), data)
        .index_put_(index.with_batch(at.batch_size, data.value.device()), v, accumulate);
    return self;
  } else {
    const Tensor out = as_rows(batching::batch_first_expanded(data, at.batch_size), data)
                           .index_put(index.with_batch(at.batch_size, data.value.device()), v, accumulate);
    return batching::make_batched(data.logical_dim() == 0 ? out.squeeze(1) : out, 0, at.level);
  }
}

Tensor index_put_batched(const Tensor& self, const Indices& indices, const Tensor& values,
                         bool accumulate) {
  if (auto out = index_put_physical<false>(self, indices, values, accumulate)) return *out;
  const batching::BelowThisLevel below;
  return self.index_put(indices, values, accumulate);
}

const Tensor& index_put__batched(const Tensor& self, const Indices& indices, const Tensor& values,
                                 bool accumulate) {
  if (index_put_physical<true>(self, indices, values, accumulate)) return self;
  const batching::BelowThisLevel below;
  return self.index_put_(indices, values, accumulate);
}

Tensor masked_select_batched(const Tensor& self, const Tensor& mask) {
  const batching::VmapLevel at = batching::current_vmap_level(kMaskedSelect);
  const BatchedArg data = batching::unwrap(self, at.level);
  const BatchedArg m = batching::unwrap(mask, at.level);
  if (!data.batched() && !m.batched()) {
    const batching::BelowThisLevel below;
    return self.masked_select(mask);
  }
  // A batched mask throws here, naming the op.
  const BatchedIndices check({mask}, at.level, kMaskedSelect);
  const batching::BelowThisLevel below;
  const Tensor batch = batching::batch_first(data);
  const DimVector sizes = masked_select_sizes(IntArrayRef(batch.sizes().data() + 1, batch.sizes().size() - 1), m.value);
  DimVector batch_sizes{at.batch_size};
  for (int64_t s : sizes) batch_sizes.push_back(s);
  Tensor expanded = batching::batch_first_padded(data, static_cast<int64_t>(sizes.size()))
                        .expand(batch_sizes);
  if (sizes.empty()) expanded = expanded.unsqueeze(1);
  const BatchedIndices index({m.value.expand(sizes)}, at.level, kMaskedSelect);
  return batching::make_batched(expanded.index(index.with_batch(at.batch_size, expanded.device())), 0, at.level);
}

// ---- the rows (Note [One op, one place]) ----
// The shape functions count a mask's true values (they need its data: in fake
// mode, an error says the size is data-dependent). index and masked_select move
// elements (zero FLOPs); index_put adds once per element written with
// accumulate.

MetaList index_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  return shape::single(plan_indexing(self, args[1].to_tensor_list(), kIndex).result_sizes(),
                       self.dtype());
}

MetaList index_put_shape(OpArgs args) {
  check_indices(shape::tensor_arg(args, 0), args[1].to_tensor_list(), kIndexPut);
  return shape::same_as_self(args);
}

MetaList masked_select_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  const Tensor& mask = shape::tensor_arg(args, 1);
  const DimVector sizes = masked_select_sizes(self.sizes(), mask);
  // Broadcasting repeats each element of the mask numel(sizes) / numel(mask) times.
  const int64_t count = true_positions(mask, kMaskedSelect).front().numel();
  return shape::single({mask.numel() == 0 ? 0 : count * (product(sizes) / mask.numel())},
                       self.dtype());
}

int64_t index_put_flops(OpArgs args, const MetaList&) {
  if (!args[3].to_bool()) return 0;
  return product(plan_indexing(shape::tensor_arg(args, 0), args[1].to_tensor_list(), kIndexPut)
                     .result_sizes());
}

KernelFunction index_put_derivative() {
  return derivative({.backward = &index_put_backward,
                     .forward = &index_put_forward,
                     .saved_inputs = args(1)});
}

const OpFamily kIndexPutOps("index_put", {
    {.schema = "index.Tensor(Tensor self, Tensor[] indices) -> Tensor",
     .cpu = &index_any,
     .cuda = &index_any,
     .derivative = derivative({.backward = &index_backward,
                               .forward = &index_forward,
                               .saved_inputs = args(1)}),
     .batching = &index_batched,
     .shape = &index_shape,
     .flops = &flops::zero},
    {.schema = "index_put(Tensor self, Tensor[] indices, Tensor values, bool accumulate=False) "
               "-> Tensor",
     .cpu = &index_put_any,
     .cuda = &index_put_any,
     .derivative = index_put_derivative(),
     .batching = &index_put_batched,
     .shape = &index_put_shape,
     .flops = &index_put_flops},
    {.schema = "index_put_(Tensor(a!) self, Tensor[] indices, Tensor values, "
               "bool accumulate=False) -> Tensor(a!)",
     .cpu = &index_put__any,
     .cuda = &index_put__any,
     .derivative = index_put_derivative(),
     .batching = &index_put__batched,
     .shape = &index_put_shape,
     .flops = &index_put_flops},
    {.schema = "masked_select(Tensor self, Tensor mask) -> Tensor",
     .cpu = &masked_select_any,
     .cuda = &masked_select_any,
     .derivative = derivative({.backward = &masked_select_backward,
                               .forward = &masked_select_forward,
                               .saved_inputs = args(1)}),
     .batching = &masked_select_batched,
     .shape = &masked_select_shape,
     .flops = &flops::zero},
});

}  // namespace

Tensor Tensor::index(const std::vector<Tensor>& indices) const {
  const auto lead = index_put_detail::leading_form(*this, indices, kIndex);
  return STRATA_OP("strata::index", "Tensor", IndexSig).call(*this, lead ? *lead : indices);
}

Tensor Tensor::index_put(const std::vector<Tensor>& indices, const Tensor& values,
                         bool accumulate) const {
  const auto lead = index_put_detail::leading_form(*this, indices, kIndexPut);
  return STRATA_OP("strata::index_put", "", IndexPutSig)
      .call(*this, lead ? *lead : indices, values, accumulate);
}

const Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                                 bool accumulate) const {
  const auto lead = index_put_detail::leading_form(*this, indices, kIndexPutInplace);
  return STRATA_OP("strata::index_put_", "", IndexPutInplaceSig)
      .call(*this, lead ? *lead : indices, values, accumulate);
}

Tensor Tensor::masked_select(const Tensor& mask) const {
  return STRATA_OP("strata::masked_select", "", MaskedSelectSig).call(*this, mask);
}

}  // namespace strata
