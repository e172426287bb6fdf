#include "func/jacobian.h"

#include <algorithm>

#include "dispatcher/dispatch_mode.h"
#include "func/vmap/vmap.h"
#include "ops/creation.h"
#include "ops/shape.h"
#include "tensor/error.h"
#include "tensor/storage.h"
#include "tensor/tensor_impl.h"
#include "transforms/layer_stack.h"

namespace strata::jacobian {
namespace {

int64_t total_numel(const std::vector<Tensor>& leaves) {
  int64_t n = 0;
  for (const Tensor& t : leaves) n += t.numel();
  return n;
}

Tensor reshaped(const Tensor& t, IntArrayRef sizes) {
  return t.sizes() == sizes ? t : t.reshape(sizes);
}

// Note [Reusing the identity basis]
// jacfwd and hessian push the whole n x n identity through fn on every call, and
// building it (a memset of n^2 elements) is a visible part of a small Hessian's
// cost. A small identity is kept per thread and handed out again only while nothing else can
// have written it or still holds it: its storage's version is the one it was
// built with, and the cache holds the only reference to the tensor and its
// storage (a caller that kept the basis, or a view of it, keeps it from reuse).
// Only outside every transform and when nothing watches the dispatcher: inside a
// transform eye() makes a tensor of that transform's level, and a dispatch mode
// or the dispatch trace must see the call.
constexpr int64_t kReusedIdentityMaxBytes = int64_t{1} << 20;

struct ReusedIdentity {
  Tensor tensor;
  uint32_t version = 0;

  bool reusable(int64_t n, ScalarType dtype, Device device) const {
    if (!tensor.defined() || tensor.size(0) != n || tensor.dtype() != dtype ||
        tensor.device() != device) {
      return false;
    }
    const TensorImpl& impl = *tensor.impl();
    return impl.use_count() == 1 && impl.storage()->use_count() == 1 &&
           impl.storage()->version() == version;
  }
};

Tensor identity(int64_t n, ScalarType dtype, Device device) {
  const bool reuse = layer_stack_empty() && !dispatcher_watched() &&
                     n * n * static_cast<int64_t>(element_size(dtype)) <= kReusedIdentityMaxBytes;
  if (!reuse) return eye(n, n, dtype, device);
  thread_local ReusedIdentity cached;
  if (!cached.reusable(n, dtype, device)) {
    cached.tensor = eye(n, n, dtype, device);
    cached.version = cached.tensor.impl()->storage()->version();
  }
  return cached.tensor;
}

// Rows [start, start + count) of the n x n identity.
Tensor identity_rows(int64_t start, int64_t count, int64_t n, ScalarType dtype, Device device) {
  if (start == 0 && count == n) return identity(n, dtype, device);
  Tensor rows = zeros({count, n}, dtype, device);
  rows.diagonal(start, 0, 1).fill_(1.0);
  return rows;
}

// Rows [start, start + count) of the standard basis of the space of `leaves`,
// split per leaf: [count, leaf shape...] each.
std::vector<Tensor> basis_chunk(const std::vector<Tensor>& leaves, int64_t n, int64_t start,
                                int64_t count) {
  const Tensor rows =
      identity_rows(start, count, n, leaves.front().dtype(), leaves.front().device());
  std::vector<Tensor> chunk;
  chunk.reserve(leaves.size());
  int64_t offset = 0;
  for (const Tensor& leaf : leaves) {
    const int64_t numel = leaf.numel();
    Tensor part = numel == n ? rows : rows.narrow(1, offset, numel);
    DimVector shape(leaf.sizes());
    shape.insert(0, count);
    part = reshaped(part, shape);
    if (part.device() != leaf.device()) part = part.to(leaf.device());
    chunk.push_back(part.dtype() == leaf.dtype() ? part : part.to(leaf.dtype()));
    offset += numel;
  }
  return chunk;
}

// fn's results on every vector of the standard basis of the space of `space`,
// stacked along a new dim 0 (Note [Jacobians]); `stacked` is false when the space
// has at most one dim and fn was called once, on ones (or on empty tensors). With
// `chunk_basis` the basis is built a chunk at a time (jacrev); otherwise vmap does
// the chunking, so that random ops in fn see one vmap call whose chunks replay the
// same random streams (jacfwd).
struct BasisImage {
  Pushed values;
  bool stacked;
};

BasisImage push_basis(const char* transform, const BasisFunction& fn,
                      const std::vector<Tensor>& space, const JacobianOptions& options,
                      bool chunk_basis) {
  STRATA_CHECK(options.chunk_size >= 0, transform, "chunk_size must be >= 0, got ",
               options.chunk_size);
  const int64_t n = total_numel(space);
  if (n <= 1) {
    std::vector<Tensor> vector;
    for (const Tensor& leaf : space) {
      vector.push_back(leaf.numel() == 1 ? ones_like(leaf) : zeros_like(leaf));
    }
    return {fn(vector), false};
  }
  auto call_fn = [&](const std::vector<Tensor>& rows) { return fn(rows); };
  const int64_t step = options.chunk_size == 0 ? n : std::min(options.chunk_size, n);
  if (!chunk_basis || step == n) {
    const VmapOptions vmap_options{.randomness = options.randomness,
                                   .chunk_size = step == n ? 0 : step};
    return {vmap(call_fn, vmap_options)(basis_chunk(space, n, 0, n)), true};
  }
  std::vector<Pushed> chunks;
  for (int64_t start = 0; start < n; start += step) {
    const int64_t count = std::min(step, n - start);
    std::vector<Tensor> basis = basis_chunk(space, n, start, count);
    if (count > 1) {
      chunks.push_back(vmap(call_fn, {.randomness = options.randomness})(basis));
      continue;
    }
    for (Tensor& t : basis) t = t.select(0, 0);
    chunks.push_back(fn(basis));
    for (Tensor& t : chunks.back().first) t = t.unsqueeze(0);
  }
  BasisImage image{{}, true};
  for (size_t k = 0; k < chunks.front().first.size(); ++k) {
    std::vector<Tensor> parts;
    parts.reserve(chunks.size());
    for (Pushed& chunk : chunks) parts.push_back(std::move(chunk.first[k]));
    image.values.first.push_back(cat(parts, 0));
  }
  return image;
}

// The block of `image` (one result of push_basis) that belongs to the leaf of the
// basis' space at `offset`: the space leaf's dims then the result's own, or, with
// space_last, the result's own then the space leaf's.
Tensor block(const Tensor& image, bool stacked, const Tensor& space_leaf, int64_t offset,
             int64_t space_numel, bool space_last) {
  const int64_t numel = space_leaf.numel();
  IntArrayRef own = image.sizes();
  if (stacked) own = IntArrayRef(own.data() + 1, own.size() - 1);
  DimVector shape(space_leaf.sizes());
  for (int64_t d : own) shape.push_back(d);
  Tensor rows = numel == 0                         ? zeros(shape, image.dtype())
                : !stacked || numel == space_numel ? reshaped(image, shape)
                                                   : image.narrow(0, offset, numel).reshape(shape);
  const int64_t space_dims = space_leaf.dim();
  if (!space_last || space_dims == 0 || own.empty()) return rows;
  DimVector order;
  for (size_t d = 0; d < own.size(); ++d) order.push_back(space_dims + static_cast<int64_t>(d));
  for (int64_t d = 0; d < space_dims; ++d) order.push_back(d);
  return rows.permute(order);
}

}  // namespace

void check_output(const char* transform, size_t index, const Tensor& value, int64_t level) {
  STRATA_CHECK(value.defined(), transform, "output ", index, " is an undefined tensor");
  STRATA_CHECK(is_floating_point(value.dtype()), transform, "output ", index, " (shape ",
               shape_string(value.sizes()), ") has dtype ", to_string(value.dtype()),
               "; only floating-point outputs have a Jacobian (level ", level, ")");
}

void check_has_outputs(const char* transform, size_t count, int64_t level) {
  STRATA_CHECK(count > 0, transform,
               "the function returned no tensors; a Jacobian needs at least one output (level ",
               level, ")");
}

void throw_chunk_structure(const char* transform, int64_t chunk_size,
                           const std::string& difference) {
  STRATA_FAIL(transform, "with chunk_size ", chunk_size,
              ", f returned a result structured otherwise for a later chunk of basis vectors "
              "than for the first (",
              difference, "); f must return the same structure on every call");
}

std::vector<Tensor> reverse(autograd::GradCall& call, const std::vector<Tensor>& outputs,
                            const JacobianOptions& options) {
  check_has_outputs(call.transform(), outputs.size(), call.level());
  std::vector<Tensor> values;
  values.reserve(outputs.size());
  for (const Tensor& out : outputs) {
    values.push_back(call.leave(out));
    check_output(call.transform(), values.size() - 1, values.back(), call.level());
  }
  const BasisFunction pull = [&](const std::vector<Tensor>& cotangents) {
    return Pushed{call.backward(outputs, cotangents), {}};
  };
  const BasisImage image =
      push_basis(call.transform(), pull, values, options, /*chunk_basis=*/true);
  const std::vector<Tensor>& grads = image.values.first;  // one per input leaf
  const int64_t m = total_numel(values);
  std::vector<Tensor> blocks;
  blocks.reserve(values.size() * grads.size());
  int64_t offset = 0;
  for (const Tensor& value : values) {
    for (const Tensor& g : grads) {
      blocks.push_back(block(g, image.stacked, value, offset, m, /*space_last=*/false));
    }
    offset += value.numel();
  }
  return blocks;
}

Pushed forward(const BasisFunction& push, const std::vector<Tensor>& primals,
               const JacobianOptions& options) {
  const BasisImage image = push_basis("jacfwd", push, primals, options, /*chunk_basis=*/false);
  const int64_t n = total_numel(primals);
  Pushed result;
  for (const Tensor& tangent : image.values.first) {
    int64_t offset = 0;
    for (const Tensor& primal : primals) {
      result.first.push_back(block(tangent, image.stacked, primal, offset, n, /*space_last=*/true));
      offset += primal.numel();
    }
  }
  for (const Tensor& aux : image.values.second) {
    result.second.push_back(image.stacked ? aux.select(0, 0) : aux);
  }
  return result;
}

}  // namespace strata::jacobian
