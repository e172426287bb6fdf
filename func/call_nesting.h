#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dispatcher/ivalue.h"

namespace strata {

struct OpDef;
class OperatorEntry;
class OperatorHandle;
class TensorImpl;

// The transforms running when a call was seen, outermost first: "vmap/grad" for
// a call inside grad inside vmap, "none" outside every transform. Packed, so
// that a mode can key its tables by it without building a string per call.
class LayerPath {
 public:
  // The calling thread's layer stack now.
  static LayerPath current();
  size_t depth() const { return depth_; }
  std::string to_string() const;
  uint64_t key() const { return (bits_ << 8) | depth_; }
  bool operator==(const LayerPath&) const = default;

 private:
  uint64_t bits_ = 0;  // 4 bits per layer, outermost lowest; only the first 14 layers
  size_t depth_ = 0;
};

// Note [Counting FLOPs]
// Which of the calls a dispatch mode sees execute, and what they cost, by each
// op's row formula (OpDef::flops; a multiply-add counts 2). A mode sees a call
// once at every transform level it passes; it is counted once:
//  - a composite row (defined by its decomposition) counts nothing itself: the
//    mode sees the ops it decomposes into;
//  - a call on a transform's tensors (a grad or jvp level's wrappers, a vmap
//    level's batched tensors) counts nothing when the calls it makes are seen
//    too (the interpreter's calls on the unwrapped values, a batching rule's
//    ops, a derivative formula's): those are what run. Such a call counts, by
//    its own formula on its own shapes, only when nothing below it is seen
//    (an op that passes straight through, or a transform entered before the
//    mode was pushed, whose lower levels the mode does not see);
//  - a call seen again inside itself (the same op on the same first tensor:
//    a transform's back fallback popped its layer and dispatched the call
//    again, which brings it past the mode once more) counts only the inner time;
//  - a call whose kernel calls ops the mode sees (a kernel written with other
//    ops, such as sin_backward's grad * cos(self)) keeps of its formula only
//    what those calls leave out, never less than zero: the work is counted once,
//    on the ops that do it;
//  - an op without a row (a user's op) counts its calls with zero FLOPs.
// A counted call is charged to the level its outermost seen call was issued at
// (the root of the nesting): under vmap(grad(f)) f's own ops are issued at
// "vmap/grad", grad's backward pass at "vmap" (grad's layer ends before its
// backward runs), and what vmap itself does to the outputs at "none".
// Modes are per thread: ops run on other threads are not seen.
class CallNesting {
 public:
  // Before a call is passed on. `def` is the op's row (null: none).
  void enter(const OperatorHandle& op, const OpDef* def, const Stack& stack);
  struct Left {
    bool counted = false;   // the call executed (see the note)
    int64_t flops = 0;      // its own FLOPs when counted
    int64_t inner_flops = 0;  // the FLOPs counted on the calls inside it
    LayerPath issued_at;    // the level of the outermost call it ran inside
  };
  // After the call returned its results on `stack`.
  Left leave(const Stack& stack);
  // After the call threw.
  void abandon() { frames_.pop_back(); }

 private:
  struct Frame {
    const OperatorEntry* op;
    const TensorImpl* first;  // its first tensor argument
    const OpDef* def;
    size_t first_arg;
    bool on_transform_tensors;
    LayerPath issued_at;
    // The arguments as passed, for the formula (the call replaces them by its results).
    Stack args;
    bool saw_inner = false;
    int64_t inner_flops = 0;
    // The same call came back (a layer's back fallback popped the layer and
    // dispatched it again): the inner one is counted.
    bool reentered = false;
  };
  std::vector<Frame> frames_;
};

}  // namespace strata
