#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "dispatcher/dispatch_mode.h"

namespace strata {

struct OpDef;
class OperatorEntry;
class TensorImpl;

// Note [Counting FLOPs]
// A dispatch mode that adds up the floating-point operations of the calls it
// sees, by each op's row formula (OpDef::flops; a multiply-add counts 2). It
// counts what executes, once:
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
//  - an op without a row (a user's op) counts its calls with zero FLOPs.
// So vmap(grad(f)), jacrev and hessian count the ops they execute. Modes are
// per thread: ops run on other threads are not seen.
class FlopCounter : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, Stack& stack) override;

  // FLOPs of everything counted so far.
  int64_t total() const;
  // FLOPs per op, named as registered ("strata::mm", "strata::add.Tensor").
  std::map<std::string, int64_t> by_op() const;
  // Counted calls per op.
  std::map<std::string, int64_t> calls() const;
  // A table: op, calls, FLOPs, share of the total; largest first.
  std::string to_string() const;
  void reset();

 private:
  struct PerOp {
    std::string name;
    const OpDef* def = nullptr;
    int64_t calls = 0;
    int64_t flops = 0;
  };
  PerOp& entry_for(const OperatorHandle& op);

  std::unordered_map<const OperatorEntry*, PerOp> ops_;
  // A call being dispatched, and what the mode has seen inside it.
  struct Frame {
    const OperatorEntry* op;
    const TensorImpl* first;  // its first tensor argument
    bool saw_inner = false;
    // The same call came back (a layer's back fallback popped the layer and
    // dispatched it again): the inner one is counted.
    bool reentered = false;
  };
  std::vector<Frame> frames_;
};

}  // namespace strata
