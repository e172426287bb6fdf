#include <unordered_map>
#include <unordered_set>

#include "dispatcher/dispatch_mode.h"
#include "dispatcher/dispatcher.h"
#include "func/control_flow/lanes.h"
#include "ops/elementwise.h"
#include "tensor/error.h"
#include "transforms/functionalize/functional_tensor.h"
#include "transforms/layer_stack.h"

namespace strata::control_flow {

namespace {

// Masks the tensors a function captures (Note [Untaken lanes do not poison
// derivatives]): for each call the function makes at its own level, a floating
// argument the function did not compute and that some grad or jvp level sees
// is replaced by its masked version (made once per tensor). The calls made
// while one of these runs are left alone. A write to a captured tensor, or to a
// view of one, is refused: every lane runs the function, so the write would
// reach the lanes that do not take it too.
//
// A functionalize level hands its calls to no dispatch mode: there a
// LaneWatch masks the captured tensors and notes the writes instead.
class MaskCaptured final : public DispatchMode {
 public:
  MaskCaptured(Tensor pred, bool taken_when, int64_t level, const char* op, const char* fn_name,
               const std::vector<Tensor>& operands, const ArgNames& names)
      : pred_(std::move(pred)), taken_when_(taken_when), level_(level), op_(op), fn_name_(fn_name),
        names_(names), operands_(operands) {
    for (const Tensor& x : operands) keep(x);
  }

  void dispatch(const OperatorHandle& op, Stack& stack) override {
    const std::vector<Argument>& schema_args = op.schema().arguments();
    const size_t first = stack.size() - schema_args.size();
    bool masked_any = false;
    if (at_function_level()) {
      for (size_t i = first; i < stack.size(); ++i) {
        const Argument& arg = schema_args[i - first];
        if (arg.alias && arg.alias->is_write) {
          if (stack[i].is_tensor()) refuse_write(op, stack[i].to_tensor());
          continue;
        }
        if (stack[i].is_tensor()) {
          masked_any = mask(stack[i].to_tensor()) || masked_any;
        } else if (stack[i].is_tensor_list()) {
          for (Tensor& t : stack[i].to_tensor_list()) masked_any = mask(t) || masked_any;
        }
      }
    }
    ++depth_;
    try {
      // The call's dispatch keys were those of the tensors it was given: a
      // masked capture is batched where the tensor may not have been, so such
      // a call dispatches afresh (this mode hidden, as during call_next()).
      if (masked_any) {
        op.call_boxed(stack);
      } else {
        call_next(op, stack);
      }
    } catch (...) {
      --depth_;
      throw;
    }
    --depth_;
    for_each_tensor_argument(stack, stack.size() - op.schema().returns().size(),
                             [&](const Tensor& t) { keep(t); });
  }

 private:
  // A call the function makes itself: its level on top (not a transform it
  // applies inside), and not made while a call of it runs (a batching rule's
  // or a composite's ops on the values it already chose).
  bool at_function_level() const {
    return depth_ == 0 && !layer_stack_empty() && top_layer("control flow").level == level_;
  }

  // t is the function's own (an operand, already masked, or a result): never masked.
  void keep(const Tensor& t) {
    if (!t.defined()) return;
    own_.insert(t.impl());
    alive_.push_back(t);  // so no captured tensor is later allocated at its address
  }

  void refuse_write(const OperatorHandle& op, const Tensor& target) const {
    if (!target.defined()) return;
    const StorageImpl* memory = target.impl()->underlying_storage();
    for (size_t i = 0; i < operands_.size(); ++i) {
      if (operands_[i].defined() && memory != nullptr &&
          operands_[i].impl()->underlying_storage() == memory) {
        fail_input_write(op_, fn_name_, names_, i, operands_[i], op.schema().name());
      }
    }
    const bool captured = own_.count(target.impl()) == 0 || captured_memory_.count(memory) > 0;
    STRATA_CHECK(!captured, op_, fn_name_, " writes a tensor it captures in place (",
                 op.schema().name(), " on shape ", shape_string(target.sizes()),
                 ") under vmap with a per-lane predicate: every lane runs the function, so the "
                 "write would reach lanes that do not take it; compute a new tensor out of place "
                 "and return it");
  }

  // Whether t was swapped for its masked version.
  bool mask(Tensor& t) {
    if (!t.defined() || own_.count(t.impl()) > 0) return false;
    if (const StorageImpl* memory = t.impl()->underlying_storage()) captured_memory_.insert(memory);
    if (!is_floating_point(t.dtype())) return false;
    auto it = masked_.find(t.impl());
    if (it == masked_.end()) {
      // The calls masking makes (where(), and a batching rule's below it) are
      // not the function's: their arguments must not be masked again.
      ++depth_;
      std::vector<Tensor> masked;
      try {
        masked = mask_untaken_lanes(pred_, taken_when_, {t});
      } catch (...) {
        --depth_;
        throw;
      }
      --depth_;
      it = masked_.emplace(t.impl(), masked.front()).first;
      keep(masked.front());
    }
    const bool swapped = it->second.impl() != t.impl();
    t = it->second;
    return swapped;
  }

  Tensor pred_;
  bool taken_when_;
  int64_t level_;
  const char* op_;
  const char* fn_name_;
  ArgNames names_;
  std::vector<Tensor> operands_;
  int depth_ = 0;
  // The memory under the captured tensors the function has used.
  std::unordered_set<const StorageImpl*> captured_memory_;
  std::unordered_set<const TensorImpl*> own_;
  std::unordered_map<const TensorImpl*, Tensor> masked_;
  std::vector<Tensor> alive_;
};

// Masks what a function running at a functionalize level passes below it
// and did not make (Note [Watching functionalized writes]), one level down.
class LaneWatch final : public functionalization::WriteWatch {
 public:
  LaneWatch(int64_t level, const Tensor& pred, bool taken_when)
      : WriteWatch(level), taken_when_(taken_when) {
    const auto* f = functionalization::as_functional(pred);
    pred_ = f != nullptr ? f->value() : pred;
  }

 private:
  void earlier_argument(Tensor& value) override {
    if (!is_floating_point(value.dtype())) return;
    auto it = masked_.find(value.impl());
    if (it == masked_.end()) {
      const BelowTopLayer below;
      it = masked_.emplace(value.impl(), mask_untaken_lanes(pred_, taken_when_, {value}).front()).first;
      alive_.push_back(value);
    }
    value = it->second;
  }

  Tensor pred_;
  bool taken_when_;
  std::unordered_map<const TensorImpl*, Tensor> masked_;
  std::vector<Tensor> alive_;
};

}  // namespace

std::vector<Tensor> run_on_lanes(const Tensor& pred, bool taken_when, const char* op,
                                 const char* fn_name, const FlatFn& fn,
                                 const std::vector<Tensor>& operands, const ArgNames& names) {
  const int64_t level = top_layer("control flow").level;
  const LaneWatch watch(level, pred, taken_when);  // before the operands' masked copies are made
  const std::vector<Tensor> masked = mask_untaken_lanes(pred, taken_when, operands);
  const DispatchModeGuard guard(
      std::make_shared<MaskCaptured>(pred, taken_when, level, op, fn_name, masked, names));
  std::vector<Tensor> out =
      call_without_writes(op, fn_name, fn, masked, names, /*functionalized_too=*/true);
  STRATA_CHECK(!watch.wrote_earlier_tensor(), op, fn_name,
               " writes a tensor it captures in place under functionalize with a per-lane "
               "predicate: every lane runs the function, so the write would reach lanes that do "
               "not take it; compute a new tensor out of place and return it");
  return out;
}

}  // namespace strata::control_flow
