#pragma once

// What index, index_put and masked_select (ops/index_put.cpp) share: where a list
// of indices points in self. Defined in ops/index_put_plan.cpp. Not public API.

#include <cstdint>
#include <optional>
#include <vector>

#include "tensor/small_vector.h"
#include "tensor/tensor.h"

namespace strata::index_put_detail {

using Indices = std::vector<Tensor>;

int64_t product(IntArrayRef sizes);

// t read with `sizes` (t broadcast to them: its sizes right-aligned, size-1 and
// missing dims repeated), as a view of its storage.
Tensor broadcast_view(const Tensor& t, IntArrayRef sizes);

// A contiguous copy of t broadcast to `sizes`, in `dtype` (t itself when it is one).
Tensor contiguous_copy(const Tensor& t, IntArrayRef sizes, ScalarType dtype, const char* op);

// t's values on the host: t itself on the CPU, else a copy (which waits for the
// device). The plan reads index values there.
Tensor on_host(const Tensor& t, const char* op);
// Block offsets as an Int64 tensor on `device`.
Tensor offsets_on(const std::vector<int64_t>& offsets, Device device, const char* op);
// The Int64 indices of the true elements of a Bool mask, one tensor per dim of
// the mask. Reads the mask's values, through a grad level's wrapper if need be;
// throws, naming `op`, for a tensor without values (fake mode): the number of
// positions is data-dependent.
Indices true_positions(const Tensor& mask, const char* op);

// Checks each index against self (dtype, device, and a mask's sizes against the
// dims it covers) and returns the number of dims they index.
int64_t check_indices(const Tensor& self, const Indices& indices, const char* op);

// Where the indices point: the positions' shape, and the sizes after the indexed dims.
struct Indexing {
  Indices indices;  // Int64, one per indexed dim
  DimVector positions;
  DimVector block;

  DimVector result_sizes() const;
};
Indexing plan_indexing(const Tensor& self, const Indices& indices, const char* op);

// self[indices...] by the plan.
Tensor index_with(const Tensor& self, const Indexing& plan, const char* op);
// The offsets of the blocks the plan selects in a contiguous tensor of self's sizes.
std::vector<int64_t> offsets_of(const Indexing& plan, const Tensor& self, const char* op);

// The indices in the leading form the ops take, for a list where an undefined
// entry is a full slice (ops/index_slices.cpp); nullopt when it is one already.
// Throws, naming `op`, when the entries cover more dims than self has or the
// Int64 indices do not broadcast together.
std::optional<Indices> leading_form(const Tensor& self, const Indices& indices, const char* op);

}  // namespace strata::index_put_detail
