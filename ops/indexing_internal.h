#pragma once

// Helpers shared by the indexing operator files (indexing.cpp: index_select and
// gather; indexing_scatter.cpp: scatter_add and index_add; the checks are defined
// in indexing_common.cpp). Not part of the public API.
//
// Index tensors are Int64; every index is checked against the size of the dim it
// indexes. The checks of the arguments read only shapes and dtypes (the batching
// rules run them on one sample's) and return dim wrapped; the index values are
// checked by the kernels.
//
// Derivatives (Note [Derivative formulas]): index arguments are integer, so they
// never get a gradient. Each formula is linear in the output gradient and built
// from the indexing ops themselves (index_select and index_add, gather and
// scatter_add are each other's adjoints), so grad of grad stays within these
// files' formulas.

#include <optional>
#include <utility>

#include "dispatcher/local_dispatch_key_set.h"
#include "tensor/small_vector.h"
#include "tensor/tensor.h"
#include "transforms/vmap/batching.h"

namespace strata::indexing_detail {

// A 0-dim tensor counts as one element along dim 0.
inline int64_t size_at(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.sizes()[dim]; }

void check_index_tensor(const Tensor& self, const Tensor& index, const char* op);

// index_select and index_add take a list of positions along one dim.
void check_index_list(const Tensor& self, const Tensor& index, const char* op);

// gather and scatter_add: index has other's rank and fits inside it, except along
// `free_dim` (the indexed dim of self) when given.
void check_index_within(const Tensor& index, const Tensor& other, const char* other_name,
                        std::optional<int64_t> free_dim, const char* op);

// The index values against the size of the indexed dim: scatters write into
// existing data, so they check before they start.
void check_index_values(const Tensor& self, int64_t d, const Tensor& index, const char* op);

// Batching rules (Note [Batching rules]):
// A rule checks one sample's shapes with the op's own checks (a batched tensor's
// sizes are a sample's), then indexes the whole batch behind a leading batch dim;
// an argument that is the same for every sample is expanded to the batch (a
// view). A batched list of positions (index_select, index_add) becomes the index
// of gather or scatter_add, which has the data's rank, so every sample reads or
// writes at its own positions.

// A rule's view of its call: the vmap level, and the guard that sends the ops
// the rule calls on values (never batched at this level) straight to the layers
// below instead of back to this level's rules.
struct BatchedCall {
  const char* op;
  batching::VmapLevel at;
  ExcludeDispatchKeyGuard below{DispatchKey::Batched};

  explicit BatchedCall(const char* name) : op(name), at(batching::current_vmap_level(name)) {}
  batching::BatchedArg unwrap(const Tensor& t) const { return batching::unwrap(t, at.level); }

  // Every sample of `t`, batch first. The kernels count a 0-dim tensor as one
  // element along dim 0, so a 0-dim sample becomes [1], keeping the batch dim out
  // of the indexing.
  Tensor samples_of(const Tensor& t) const {
    const batching::BatchedArg arg = unwrap(t);
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

}  // namespace strata::indexing_detail
