#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "dispatcher/ivalue.h"
#include "dispatcher/kernel_function.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "transforms/vmap/batched_tensor.h"
#include "transforms/vmap/vmap_interpreter.h"

// Note [Batching rules]
// An operator's batching rule is its kernel at the Batched key, registered next
// to its schema, kernels and derivative. It runs with this vmap layer on top and
// sees the op's arguments as the function being vmapped sees them (batched
// tensors of this level, or constants). It unwraps them (unwrap()), computes
// every sample at once with ordinary ops on the unwrapped values (which go on to
// the layers below), and wraps the results with their batch dim (make_batched).
// The batch dim stays where it is unless the computation needs it elsewhere.
//
//   Tensor sum_dim_batched(const Tensor& self, ...) {
//     const batching::VmapLevel at = batching::current_vmap_level("strata::sum");
//     const batching::BatchedArg x = batching::unwrap(self, at.level);
//     ... return batching::make_batched(result, 0, at.level);
//   }
//
// The ops a rule calls on unwrapped values must not come back to the Batched
// kernels of this level: a value may be a batched tensor of an outer vmap, which
// this level treats as a constant. A rule runs them under BelowThisLevel
// (Batched excluded, so they go on to the layer below). A composite kernel
// reached at the Batched key is different: it calls ops on this level's
// batched tensors, which must reach their rules.
//
// Ops without a rule take the loop fallback (one call per sample, then stack),
// which warns once per op; set_loop_fallback_enabled(false) makes it an error.

namespace strata {
class OperatorHandle;
}

namespace strata::batching {

// Sends the ops called in its scope past this level's Batched kernels.
class BelowThisLevel {
 public:
  BelowThisLevel() : guard_(DispatchKey::Batched) {}

 private:
  ExcludeDispatchKeyGuard guard_;
};

// A tensor argument of a batching rule at one level: its value (the whole batch)
// and where the batch dim is; an unbatched argument has no bdim.
struct BatchedArg {
  Tensor value;
  std::optional<int64_t> bdim;

  bool batched() const { return bdim.has_value(); }
  // The rank of one sample.
  int64_t logical_dim() const { return value.dim() - (bdim ? 1 : 0); }
};
BatchedArg unwrap(const Tensor& t, int64_t level);

// The value with its batch dim first (a view); an unbatched value as it is.
Tensor batch_first(const BatchedArg& arg);
// The same, an unbatched value expanded to the batch (a view).
Tensor batch_first_expanded(const BatchedArg& arg, int64_t batch_size);
// Batch first with size-1 dims after it until a sample has `rank` dims, so it
// broadcasts against samples of that rank; an unbatched value as it is (it
// broadcasts from the right).
Tensor batch_first_padded(const BatchedArg& arg, int64_t rank);
// Where dim `dim` of a sample of rank `rank` (negative counts from the end) is
// in a batch-first value; throws naming `op` when it is out of range.
int64_t batch_first_dim(int64_t dim, int64_t rank, const char* op);

// Throws unless an in-place op of `op` may write into `self`: if any argument is
// batched, self must be too (a batched value cannot go into one shared tensor).
void check_inplace_target(const char* op, const BatchedArg& self, bool any_batched,
                          int64_t batch_size);

// Whether an argument (a tensor or an element of a tensor list) from stack[first]
// on is batched at `level`.
bool any_batched_argument(const Stack& stack, size_t first, int64_t level);

// Runs a boxed call on unwrapped arguments with this layer popped (what a rule's
// ordinary op calls do, without passing through the back fallback).
void call_below(const OperatorHandle& op, Stack& stack);

// The rule of an op whose tensor arguments broadcast elementwise against each
// other and whose outputs have the broadcast shape: unary and binary math,
// comparisons, where, clamp, masked_fill, fill_, copy_. In-place overloads write
// into their batched self. Boxed: one rule for any signature.
KernelFunction pointwise_batch_rule();

// The operands of a binary pointwise op at one level, ready to call it on, and
// the batch dim of its result. The batch dim stays where it is when that is
// where broadcasting puts it (both operands batched alike, or the other one
// unbatched and no wider); otherwise both go batch-first.
struct PointwiseOperands {
  Tensor a;
  Tensor b;
  std::optional<int64_t> bdim;
};
PointwiseOperands align_pointwise(const Tensor& a, const Tensor& b, int64_t level);
// Whether a and b's values line up for a binary pointwise op at `level` as they
// lie (align_pointwise would keep them), and the result's batch dim then (none
// when neither is batched). The common case: the op then reads the values
// without a reference taken on them, a locked read-modify-write each.
struct PointwiseAlignment {
  bool as_they_lie;
  std::optional<int64_t> bdim;
};
PointwiseAlignment pointwise_alignment(const Tensor& a, const Tensor& b, int64_t level);
// t's value at `level`: a batched tensor's value, any other tensor itself.
inline const Tensor& value_at_level(const Tensor& t, int64_t level) {
  const BatchedTensorImpl* b = batched_at_level(t, level);
  return b != nullptr ? b->value() : t;
}

// Unboxed rules for the hottest pointwise ops (no boxing on the way in or out):
// kOp is the op's public function, whose signature is the op's, e.g.
//   m.impl("sin", &batching::UnaryPointwiseRule<&strata::sin>::call);
template <auto kOp>
struct UnaryPointwiseRule;
template <class... Rest, Tensor (*kOp)(const Tensor&, Rest...)>
struct UnaryPointwiseRule<kOp> {
  static Tensor call(const Tensor& self, Rest... rest) {
    const int64_t level = current_vmap_level("a pointwise op").level;
    BatchedTensorImpl* b = batched_at_level(self, level);
    const BelowThisLevel below;
    if (b == nullptr) return kOp(self, rest...);
    return make_batched(kOp(b->value(), rest...), b->bdim(), level);
  }
};

template <auto kOp>
struct BinaryPointwiseRule;
template <class... Rest, Tensor (*kOp)(const Tensor&, const Tensor&, Rest...)>
struct BinaryPointwiseRule<kOp> {
  static Tensor call(const Tensor& a, const Tensor& b, Rest... rest) {
    const int64_t level = current_vmap_level("a pointwise op").level;
    const PointwiseAlignment alignment = pointwise_alignment(a, b, level);
    if (alignment.as_they_lie) {
      const BelowThisLevel below;
      return make_batched(kOp(value_at_level(a, level), value_at_level(b, level), rest...),
                          alignment.bdim, level);
    }
    PointwiseOperands x = align_pointwise(a, b, level);
    const BelowThisLevel below;
    return make_batched(kOp(x.a, x.b, rest...), x.bdim, level);
  }
};

// call_per_sample and the switch below (and any_batched_argument above) are
// defined with the loop fallback, which calls stack, in func/vmap/loop_fallback.cpp
// (Note [Operator calls live above ops/]).

// Calls `op` once per sample on slices of this level's batched arguments and
// stacks every tensor output along dim 0; `prepare(sample, stack)` may adjust a
// sample's arguments first (random ops swap their generator). In-place ops write
// into the slices of their batched self and return it.
void call_per_sample(const OperatorHandle& op, Stack& stack, const VmapLevel& at,
                     const std::function<void(int64_t, Stack&)>& prepare = {});

// The loop fallback: on (default) it warns once per op; off, an op without a
// rule is an error (the test suite uses this to prove which ops have rules).
void set_loop_fallback_enabled(bool enabled);
bool loop_fallback_enabled();
// How many calls the loop fallback has split into samples on this thread so far
// (a profiler's "loop fallback hits": differences of it around a call).
uint64_t loop_fallback_calls_on_this_thread();

}  // namespace strata::batching
