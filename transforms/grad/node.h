#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/allocator.h"
#include "tensor/inline_vector.h"
#include "tensor/intrusive_ptr.h"
#include "tensor/tensor.h"
#include "transforms/grad/derivative.h"

namespace strata::autograd {

class Node;

// Containers made with every recorded op take memory from the per-thread cache.
template <class T>
using NodeVector = std::vector<T, CachedAllocator<T>>;

// Where a gradient goes: input `input_nr` of `node` (null node: nowhere).
struct Edge {
  IntrusivePtr<Node> node;
  uint32_t input_nr = 0;
};
// One per differentiable input of the forward op; most ops have one or two.
using EdgeList = InlineVector<Edge, 2>;

// A step of the backward graph: it receives one gradient per output of the
// forward op it stands for and produces one per next edge (the forward op's
// differentiable inputs). Nodes hold only tensors of the level below the grad
// level that recorded them, so the backward pass runs there: differentiable by
// any outer grad level, and free of cycles through wrappers.
class Node : public RefCounted {
 public:
  explicit Node(EdgeList next_edges) : next_edges_(std::move(next_edges)) {}

  // One node is made per recorded op: from the per-thread cache, like TensorImpl.
  static void* operator new(size_t nbytes) { return cached_host_allocate(nbytes); }
  static void operator delete(void* ptr, size_t nbytes) { cached_host_deallocate(ptr, nbytes); }

  // grads_out has num_outputs() entries; an undefined one means zero.
  virtual GradList apply(NodeVector<Tensor>& grads_out) = 0;
  virtual uint32_t num_outputs() const = 0;
  // The forward op, for error messages.
  virtual std::string name() const = 0;

  const EdgeList& next_edges() const { return next_edges_; }
  // For a node whose edges are filled in after it is made (while recording).
  EdgeList& mutable_next_edges() { return next_edges_; }

 private:
  EdgeList next_edges_;
};

// Collects the gradient of a leaf: the input a grad transform differentiates.
class GradSink final : public Node {
 public:
  GradSink() : Node({}) {}
  GradList apply(NodeVector<Tensor>&) override { return {}; }
  uint32_t num_outputs() const override { return 1; }
  std::string name() const override { return "GradSink"; }
};

}  // namespace strata::autograd
