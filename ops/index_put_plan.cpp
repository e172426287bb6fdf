// Where a list of indices points (ops/index_put_internal.h).
#include <algorithm>
#include <utility>

#include "kernels/cpu/advanced_indexing.h"
#include "kernels/cuda/indexing.h"
#include "ops/elementwise_kernels.h"
#include "ops/index_put_internal.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"

namespace strata::index_put_detail {
namespace {

// The indices with each Bool mask replaced by its positions: all Int64.
Indices as_int_indices(const Indices& indices, const char* op) {
  Indices out;
  for (const Tensor& index : indices) {
    if (index.dtype() != kBool) {
      out.push_back(index);
      continue;
    }
    for (Tensor& positions : true_positions(index, op)) out.push_back(std::move(positions));
  }
  return out;
}

}  // namespace

int64_t product(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// t read with `sizes` (t broadcast to them: its sizes right-aligned, size-1 and
// missing dims repeated), as a view of its storage.
Tensor broadcast_view(const Tensor& t, IntArrayRef sizes) {
  DimVector strides(sizes.size(), 0);
  const size_t lead = sizes.size() - static_cast<size_t>(t.dim());
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i) {
    if (t.sizes()[i] != 1) strides[lead + i] = t.strides()[i];
  }
  return Tensor(make_intrusive<TensorImpl>(t.impl()->storage(), t.dtype(), sizes, strides,
                                           t.storage_offset()));
}

// A contiguous copy of t broadcast to `sizes`, in `dtype` (t itself when it is one).
Tensor contiguous_copy(const Tensor& t, IntArrayRef sizes, ScalarType dtype, const char* op) {
  if (t.dtype() == dtype && t.is_contiguous() && t.sizes() == sizes) return t;
  Tensor out = make_empty_tensor(sizes, dtype, t.device(), op);
  on_device::copy_kernel(out, broadcast_view(t, sizes));
  return out;
}

Tensor on_host(const Tensor& t, const char* op) {
  if (t.device().is_cpu()) return t;
  Tensor out = make_empty_tensor(t.sizes(), t.dtype(), kCPU, op);
  on_device::copy_kernel(out, t);
  return out;
}

Tensor offsets_on(const std::vector<int64_t>& offsets, Device device, const char* op) {
  Tensor host = make_empty_tensor({static_cast<int64_t>(offsets.size())}, kInt64, kCPU, op);
  std::copy(offsets.begin(), offsets.end(), host.data_ptr<int64_t>());
  if (device.is_cpu()) return host;
  Tensor out = make_empty_tensor(host.sizes(), kInt64, device, op);
  on_device::copy_kernel(out, host);
  return out;
}

// The Int64 indices of the true elements of a Bool mask, one tensor per dim of
// the mask. Reads the mask's values, through a grad level's wrapper if need be.
Indices true_positions(const Tensor& mask, const char* op) {
  const TensorImpl* source = mask.impl()->value_source();
  STRATA_CHECK(source->has_storage(), op, "a Bool index of shape ", shape_string(mask.sizes()),
               " selects as many elements as it has true values, and this one (a ",
               source->impl_name(), ") has no values to count: the output size is "
               "data-dependent");
  const Tensor readable(make_intrusive<TensorImpl>(source->storage(), kBool, source->sizes(),
                                                   source->strides(), source->storage_offset()));
  const Tensor values = on_host(contiguous_copy(readable, mask.sizes(), kBool, op), op);
  const bool* data = values.data_ptr<bool>();
  const int64_t count = std::count(data, data + values.numel(), true);
  Indices out;
  for (int64_t d = 0; d < std::max<int64_t>(mask.dim(), 1); ++d) {
    out.push_back(make_empty_tensor({count}, kInt64, kCPU, op));
  }
  int64_t next = 0;
  for (int64_t flat = 0; flat < values.numel(); ++flat) {
    if (!data[flat]) continue;
    int64_t rest = flat;
    for (int64_t d = mask.dim(); d-- > 0;) {
      out[static_cast<size_t>(d)].data_ptr<int64_t>()[next] = rest % mask.sizes()[d];
      rest /= mask.sizes()[d];
    }
    if (mask.dim() == 0) out[0].data_ptr<int64_t>()[next] = 0;
    ++next;
  }
  if (mask.device().is_cpu()) return out;
  for (Tensor& positions : out) {
    Tensor moved = make_empty_tensor(positions.sizes(), kInt64, mask.device(), op);
    on_device::copy_kernel(moved, positions);
    positions = moved;
  }
  return out;
}

// Checks each index against self (dtype, device, and a mask's sizes against the
// dims it covers) and returns the number of dims they index.
int64_t check_indices(const Tensor& self, const Indices& indices, const char* op) {
  int64_t dims = 0;
  for (const Tensor& index : indices) {
    STRATA_CHECK(index.defined(), op, "an index is undefined");
    STRATA_CHECK(index.dtype() == kInt64 || index.dtype() == kBool, op,
                 "indices must be Int64 or Bool tensors, got ", index.dtype(), " (shape ",
                 shape_string(index.sizes()), ")");
    STRATA_CHECK(index.device() == self.device(), op, "an index is on ", index.device(),
                 " but self is on ", self.device());
    if (index.dtype() == kBool) {
      STRATA_CHECK(index.dim() > 0 || self.dim() == 0, op,
                   "a 0-dim Bool index only indexes a 0-dim self, got self of shape ",
                   shape_string(self.sizes()));
      for (int64_t d = 0; d < index.dim(); ++d) {
        STRATA_CHECK(dims + d < self.dim() && index.sizes()[d] == self.sizes()[dims + d], op,
                     "the Bool index of shape ", shape_string(index.sizes()),
                     " does not match self of shape ", shape_string(self.sizes()),
                     " at dims ", dims, "...");
      }
      dims += std::max<int64_t>(index.dim(), 1);
    } else {
      ++dims;
    }
  }
  STRATA_CHECK(dims <= std::max<int64_t>(self.dim(), indices.empty() ? 0 : 1), op, "too many indices (",
               dims, " dims) for self of shape ", shape_string(self.sizes()));
  return dims;
}

// Where the indices point: the positions' shape, and the sizes after the indexed dims.
DimVector Indexing::result_sizes() const {
  DimVector sizes(positions);
  for (int64_t b : block) sizes.push_back(b);
  return sizes;
}

Indexing plan_indexing(const Tensor& self, const Indices& indices, const char* op) {
  const int64_t dims = check_indices(self, indices, op);
  Indexing plan{as_int_indices(indices, op), {}, {}};
  for (const Tensor& index : plan.indices) {
    plan.positions = broadcast_shapes(plan.positions, index.sizes(), op);
  }
  for (int64_t d = dims; d < self.dim(); ++d) plan.block.push_back(self.sizes()[d]);
  return plan;
}

// The offsets of the blocks the plan selects in a contiguous tensor of self's sizes.
std::vector<int64_t> offsets_of(const Indexing& plan, const Tensor& self, const char* op) {
  Indices dense;
  for (const Tensor& index : plan.indices) {
    dense.push_back(on_host(contiguous_copy(index, plan.positions, kInt64, op), op));
  }
  // A 0-dim self is indexed as one element along dim 0.
  const DimVector sizes = self.dim() == 0 ? DimVector{1} : DimVector(self.sizes());
  return cpu::block_offsets(dense, sizes, op);
}

Tensor index_with(const Tensor& self, const Indexing& plan, const char* op) {
  Tensor out = make_empty_tensor(plan.result_sizes(), self.dtype(), self.device(), op);
  const std::vector<int64_t> offsets = offsets_of(plan, self, op);
  const Tensor src = contiguous_copy(self, self.sizes(), self.dtype(), op);
  if (self.device().is_cuda()) {
    gpu::take_blocks_kernel(out, src, offsets_on(offsets, self.device(), op), product(plan.block));
  } else {
    cpu::take_blocks(out, src, offsets, product(plan.block));
  }
  return out;
}

}  // namespace strata::index_put_detail
