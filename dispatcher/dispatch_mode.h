#pragma once

#include <memory>

#include "dispatcher/ivalue.h"

namespace strata {

class OperatorHandle;

// An object that sees every operator call made on its thread while it is
// active: the analogue of PyTorch's TorchDispatchMode, used by trace() and by
// tools such as op or FLOP counters.
//
// Note [Dispatch modes]
// Active modes form a thread-local stack; while it is non-empty the Mode key is
// in the thread's included set, so every call reaches the Mode fallback first
// (above the transforms' keys). The fallback pops the top mode and calls its
// dispatch() with the mode popped: calling
// op.call_boxed(stack) from there passes the call on, to the next mode or, when
// none is left, to the transforms and kernels. The mode is pushed back when
// dispatch() returns or throws.
class DispatchMode {
 public:
  virtual ~DispatchMode() = default;
  // The op's arguments are the last op.schema().arguments().size() values of the
  // stack; leave its results there instead (the default passes the call on).
  virtual void dispatch(const OperatorHandle& op, Stack& stack);
};

// Pushes a mode for the guard's scope.
class DispatchModeGuard {
 public:
  explicit DispatchModeGuard(std::shared_ptr<DispatchMode> mode);
  ~DispatchModeGuard();
  DispatchModeGuard(const DispatchModeGuard&) = delete;
  DispatchModeGuard& operator=(const DispatchModeGuard&) = delete;
};

// The number of active modes on this thread.
size_t dispatch_mode_stack_size();

}  // namespace strata
