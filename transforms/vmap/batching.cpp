#include "transforms/vmap/batching.h"

#include "dispatcher/dispatcher.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"

namespace strata::batching {

BatchedArg unwrap(const Tensor& t, int64_t level) {
  if (BatchedTensorImpl* b = batched_at_level(t, level)) return {b->value(), b->bdim()};
  return {t, std::nullopt};
}

Tensor batch_first(const BatchedArg& arg) {
  if (!arg.bdim || *arg.bdim == 0) return arg.value;
  const BelowThisLevel below;
  return arg.value.movedim(*arg.bdim, 0);
}

Tensor batch_first_expanded(const BatchedArg& arg, int64_t batch_size) {
  if (arg.bdim) return batch_first(arg);
  DimVector sizes{batch_size};
  for (int64_t s : arg.value.sizes()) sizes.push_back(s);
  const BelowThisLevel below;
  return arg.value.unsqueeze(0).expand(sizes);
}

Tensor batch_first_padded(const BatchedArg& arg, int64_t rank) {
  if (!arg.bdim) return arg.value;
  Tensor value = batch_first(arg);
  const BelowThisLevel below;
  for (int64_t missing = rank - arg.logical_dim(); missing > 0; --missing) {
    value = value.unsqueeze(1);
  }
  return value;
}

int64_t batch_first_dim(int64_t dim, int64_t rank, const char* op) {
  const int64_t extent = rank == 0 ? 1 : rank;
  STRATA_CHECK(dim >= -extent && dim < extent, op, "dim ", dim,
               " is out of range for a tensor of rank ", rank, " (inside vmap)");
  return (dim < 0 ? dim + extent : dim) + 1;
}

void check_inplace_target(const char* op, const BatchedArg& self, bool any_batched,
                          int64_t batch_size) {
  STRATA_CHECK(self.batched() || !any_batched, op, "cannot write a batched value (",
               describe_layer_stack(), ", batch size ", batch_size,
               ") into the unbatched tensor of shape ", shape_string(self.value.sizes()),
               ": one tensor cannot hold a different value per sample. Create the tensor from "
               "a batched one (e.g. zeros_like(x) instead of zeros(shape)) or use the "
               "out-of-place op");
}

void call_below(const OperatorHandle& op, Stack& stack) {
  call_below_top_layer(op, argument_keys(op, stack), stack);
}

namespace {

// The dtype of a 0-dim sample is below that of samples with dims (result_type),
// but batched it has a dim; cast it first so the batch computes in the dtype one
// sample would. An in-place op's target is never cast: the op must write into it.
void cast_batched_scalars(Stack& stack, size_t first, std::optional<size_t> written,
                          const ScalarType logical_dtype, int64_t level) {
  for (size_t i = first; i < stack.size(); ++i) {
    if (!stack[i].is_tensor() || (written && i == first + *written)) continue;
    Tensor& t = stack[i].to_tensor();
    BatchedTensorImpl* b = batched_at_level(t, level);
    if (b != nullptr && t.dim() == 0 && t.dtype() != kBool && t.dtype() != logical_dtype) {
      t = t.to(logical_dtype);
    }
  }
}

void pointwise_rule(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  const char* name = op.operator_name().name.c_str();
  const VmapLevel at = current_vmap_level(name);
  const size_t first = stack.size() - op.schema().arguments().size();

  std::vector<Tensor> operands;
  bool mixed_dtypes = false;
  for (size_t i = first; i < stack.size(); ++i) {
    if (!stack[i].is_tensor() || !stack[i].to_tensor().defined()) continue;
    const Tensor& t = stack[i].to_tensor();
    if (t.dtype() == kBool) continue;
    if (!operands.empty() && operands[0].dtype() != t.dtype()) mixed_dtypes = true;
    operands.push_back(t);
  }
  const std::optional<size_t> written = op.entry().returned_argument_index();
  if (mixed_dtypes) {
    cast_batched_scalars(stack, first, written, result_type(ArrayRef<Tensor>(operands)), at.level);
  }

  int64_t rank = 0;
  bool any_batched = false;
  for (size_t i = first; i < stack.size(); ++i) {
    if (!stack[i].is_tensor()) continue;
    const BatchedArg arg = unwrap(stack[i].to_tensor(), at.level);
    if (!arg.value.defined()) continue;
    rank = std::max(rank, arg.logical_dim());
    any_batched |= arg.batched();
  }
  Tensor self;
  if (written) {
    self = stack[first + *written].to_tensor();
    check_inplace_target(name, unwrap(self, at.level), any_batched, at.batch_size);
  }
  for (size_t i = first; i < stack.size(); ++i) {
    if (!stack[i].is_tensor()) continue;
    Tensor& t = stack[i].to_tensor();
    if (t.defined()) t = batch_first_padded(unwrap(t, at.level), rank);
  }
  call_below(op, stack);
  if (written) {
    for (size_t i = first; i < stack.size(); ++i) stack[i] = self;
    return;
  }
  for (size_t i = first; i < stack.size(); ++i) {
    if (stack[i].is_tensor()) {
      stack[i] = make_batched(stack[i].to_tensor(),
                              any_batched ? std::optional<int64_t>(0) : std::nullopt, at.level);
    }
  }
}

// A batched 0-dim sample would promote like a tensor with dims (see cast_batched_scalars).
bool promotes_as_scalar(const Tensor& a, const Tensor& b) {
  return a.dtype() != b.dtype() && (a.dim() == 0 || b.dim() == 0);
}

}  // namespace

PointwiseAlignment pointwise_alignment(const Tensor& a, const Tensor& b, int64_t level) {
  const BatchedTensorImpl* x = batched_at_level(a, level);
  const BatchedTensorImpl* y = batched_at_level(b, level);
  if (x == nullptr && y == nullptr) return {true, std::nullopt};
  if (promotes_as_scalar(a, b)) return {false, std::nullopt};
  if (x != nullptr && y != nullptr) {
    const bool alike = x->bdim() == y->bdim() && x->value().dim() == y->value().dim();
    return {alike, x->bdim()};
  }
  // Broadcasting aligns the unbatched operand with the trailing dims: the batch
  // dim must lie left of them.
  const BatchedTensorImpl* batched = x != nullptr ? x : y;
  const Tensor& other = x != nullptr ? b : a;
  return {batched->bdim() < batched->value().dim() - other.dim(), batched->bdim()};
}

PointwiseOperands align_pointwise(const Tensor& a, const Tensor& b, int64_t level) {
  const PointwiseAlignment alignment = pointwise_alignment(a, b, level);
  if (alignment.as_they_lie) {
    return {value_at_level(a, level), value_at_level(b, level), alignment.bdim};
  }
  Tensor operands[] = {a, b};
  if (promotes_as_scalar(a, b)) {
    const ScalarType dtype = result_type(a, b);
    for (Tensor& t : operands) {
      if (batched_at_level(t, level) && t.dim() == 0 && t.dtype() != kBool && t.dtype() != dtype) {
        t = t.to(dtype);
      }
    }
  }
  const BatchedArg xs = unwrap(operands[0], level);
  const BatchedArg ys = unwrap(operands[1], level);
  const int64_t rank = std::max(xs.logical_dim(), ys.logical_dim());
  return {batch_first_padded(xs, rank), batch_first_padded(ys, rank), 0};
}

KernelFunction pointwise_batch_rule() { return KernelFunction::from_boxed(&pointwise_rule); }

}  // namespace strata::batching
