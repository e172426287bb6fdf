#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "dispatcher/dispatch_mode.h"
#include "func/call_nesting.h"

namespace strata {

struct OpDef;
class OperatorEntry;

// A dispatch mode that adds up the floating-point operations of the calls it
// sees, each executed call once (Note [Counting FLOPs] in func/call_nesting.h),
// so vmap(grad(f)), jacrev and hessian count the ops they execute.
class FlopCounter : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, Stack& stack) override;

  // FLOPs of everything counted so far.
  int64_t total() const;
  // FLOPs per op, named as registered ("strata::mm", "strata::add.Tensor").
  std::map<std::string, int64_t> by_op() const;
  // Counted calls per op.
  std::map<std::string, int64_t> calls() const;
  // FLOPs per transform level the work was issued at, outermost layer first
  // ("vmap/grad": f's own ops under vmap(grad(f)); "vmap": grad's backward pass
  // there; "none": outside every transform). Sums to total().
  std::map<std::string, int64_t> by_level() const;
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
  std::unordered_map<uint64_t, std::pair<LayerPath, int64_t>> levels_;  // by LayerPath::key()
  CallNesting nesting_;
};

}  // namespace strata
