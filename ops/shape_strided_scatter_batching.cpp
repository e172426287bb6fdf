// as_strided_scatter's batching rule (its row is in shape_strided.cpp). The op
// addresses memory, not elements: a sample's region is read from the sample's
// own layout (its strides; its start, where a storage offset given inside vmap
// counts from, as as_strided's rule has it). The whole batch is one
// as_strided_scatter over memory where each sample has a block of its own, large
// enough for its elements and its region, so no sample's region reaches another.
#include <algorithm>
#include <optional>
#include <vector>

#include "ops/ops.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"
#include "transforms/functionalize/functional_tensor.h"

namespace strata::shape_detail {
namespace {

using IntList = std::vector<int64_t>;

// The largest offset from `start` that a layout reaches; -1 for an empty one.
int64_t reach(IntArrayRef sizes, IntArrayRef strides, int64_t start) {
  if (checked_numel(sizes) == 0) return -1;
  int64_t last = start;
  for (size_t d = 0; d < sizes.size(); ++d) last += (sizes[d] - 1) * strides[d];
  return last;
}

IntList with_batch(int64_t front, IntArrayRef rest) {
  IntList out{front};
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace

void as_strided_scatter_batched(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  const char* name = "strata::as_strided_scatter";
  const batching::VmapLevel at = batching::current_vmap_level(name);
  const size_t first = stack.size() - op.schema().arguments().size();
  const batching::BatchedArg self = batching::unwrap(stack[first].to_tensor(), at.level);
  const batching::BatchedArg src = batching::unwrap(stack[first + 1].to_tensor(), at.level);
  const IntList size = stack[first + 2].to_int_list();
  const IntList stride = stack[first + 3].to_int_list();
  const std::optional<int64_t> storage_offset =
      stack[first + 4].is_none() ? std::nullopt : std::optional<int64_t>(stack[first + 4].to_int());
  // One sample's layout: the batch-first value's, less its batch dim.
  const Tensor value = batching::batch_first(self);
  const size_t lead = self.batched() ? 1 : 0;
  const IntArrayRef sample_sizes(value.sizes().data() + lead, value.sizes().size() - lead);
  const IntArrayRef sample_strides(value.strides().data() + lead, value.strides().size() - lead);
  if (!self.batched() && !src.batched()) {
    const batching::BelowThisLevel below;
    Tensor out = as_strided_scatter(self.value, src.value, size, stride, storage_offset);
    stack.resize(first);
    stack.emplace_back(std::move(out));
    return;
  }
  // A sample whose elements share memory cannot be given a block of its own
  // elementwise: it runs sample by sample.
  if (functionalization::may_share_elements(sample_sizes, sample_strides)) {
    batching::call_per_sample(op, stack, at);
    return;
  }
  const int64_t start = self.batched() ? 0 : self.value.storage_offset();
  const int64_t offset = storage_offset.value_or(start) - start;
  STRATA_CHECK(offset >= 0, name, "storage offset ", *storage_offset,
               " lies before the start of self (storage offset ", start, ", shape ",
               shape_string(sample_sizes), ") inside vmap");
  const int64_t block = 1 + std::max<int64_t>({reach(sample_sizes, sample_strides, 0),
                                               reach(size, stride, offset), 0});
  const IntList batch_sizes = with_batch(at.batch_size, sample_sizes);
  const IntList batch_strides = with_batch(block, sample_strides);
  const batching::BelowThisLevel below;
  // Self's values in the block layout, then the regions written in every block.
  const Tensor blocks =
      as_strided_scatter(zeros({at.batch_size * block}, value.dtype(), value.device()),
                         batching::batch_first_expanded(self, at.batch_size), batch_sizes,
                         batch_strides, 0)
          .as_strided(batch_sizes, batch_strides, 0);
  Tensor out =
      as_strided_scatter(blocks, batching::batch_first_expanded(src, at.batch_size),
                         with_batch(at.batch_size, size), with_batch(block, stride), offset);
  stack.resize(first);
  stack.emplace_back(batching::make_batched(std::move(out), 0, at.level));
}

}  // namespace strata::shape_detail
