#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dispatcher/dispatch_mode.h"
#include "func/call_nesting.h"

namespace strata {

struct OpDef;
class OperatorEntry;

// Note [Profiling a nested transform]
// A dispatch mode that answers "why is this slow" for a call such as
// vmap(grad(loss)): every call it sees is one row keyed by the op and the
// transform level it was seen at (LayerPath: "vmap/grad", "vmap", "none"), so
// one user-level mul shows up at every level it passes through, down to the
// kernel that runs it (at a level more than once when a rule calls the op again
// on its unwrapped values before the layer is popped). A row has its calls, their time (inclusive, and self:
// minus the calls seen inside them), the FLOPs of the calls that executed
// (Note [Counting FLOPs]) and how many of its calls the vmap loop fallback split
// into one call per sample (the op had no batching rule at that level; its
// per-sample calls are rows of the level below). Levels add up the work issued
// at each level: the root calls' time and the FLOPs executed under them.
// Times include the profiler's own bookkeeping; modes are per thread.
class Profiler : public DispatchMode {
 public:
  struct Row {
    std::string op;     // as registered: "strata::mul.Tensor"
    std::string level;  // LayerPath::to_string() of the layers running at the call
    size_t depth = 0;   // the number of those layers
    int64_t calls = 0;
    int64_t time_ns = 0;  // inclusive
    int64_t self_ns = 0;  // minus the calls seen inside
    int64_t flops = 0;
    int64_t loop_fallback_calls = 0;
  };
  struct Level {
    std::string level;
    int64_t root_calls = 0;  // calls issued at this level (not inside another call)
    int64_t time_ns = 0;     // their inclusive time
    int64_t flops = 0;       // executed under them
  };

  void dispatch(const OperatorHandle& op, Stack& stack) override;

  // Rows in the order first seen.
  std::vector<Row> rows() const;
  // Levels in the order first seen.
  std::vector<Level> levels() const;
  int64_t total_flops() const;
  int64_t loop_fallback_calls() const;
  // The rows as a table, largest self time first, then the levels.
  std::string to_string() const;
  // {"total_ns", "total_flops", "loop_fallback_calls", "ops": [{"op", "level",
  //  "depth", "calls", "time_ns", "self_ns", "flops", "loop_fallback_calls"}],
  //  "levels": [{"level", "root_calls", "time_ns", "flops"}]}
  std::string to_json() const;
  void reset();

 private:
  struct Timing {
    int64_t start_ns;
    int64_t inner_ns = 0;  // inclusive time of the calls seen directly inside
    uint64_t fallback_before;
    uint64_t inner_fallback = 0;  // loop fallback calls inside those
  };
  // The index of the row of `op` at `at`; sets `def` to the op's row (null: none).
  size_t row_for(const OperatorHandle& op, const LayerPath& at, const OpDef*& def);
  Level& level_for(const LayerPath& path);

  std::map<std::pair<const OperatorEntry*, uint64_t>, size_t> row_index_;
  std::vector<Row> rows_;
  std::map<const OperatorEntry*, const OpDef*> defs_;
  std::map<uint64_t, size_t> level_index_;
  std::vector<Level> levels_;
  std::vector<Timing> timings_;
  CallNesting nesting_;
};

}  // namespace strata
