#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "dispatcher/ivalue.h"

namespace strata {

class OperatorHandle;
class TypedCall;

// An object that sees every operator call made on its thread while it is
// active: the analogue of PyTorch's TorchDispatchMode, used by trace() and by
// tools such as op or FLOP counters.
//
// Note [Dispatch modes]
// Active modes form a thread-local stack; while a mode is visible the Mode key is
// in the thread's included set, so every call reaches the Mode fallback first
// (above the transforms' keys), which hands it to the top visible mode. While a
// mode's dispatch() runs, that mode and those above it are hidden, so the ops it
// calls itself reach only the modes below it and then the kernels. To pass the
// call on it calls call_next(): the next mode down gets the call, and after the
// last one the kernel runs with every mode visible again, so the modes also see
// the calls the kernel makes (a composite op's parts, in order).
class DispatchMode {
 public:
  virtual ~DispatchMode() = default;
  // The op's arguments are the last op.schema().arguments().size() values of the
  // stack; leave its results there instead. The default passes the call on.
  virtual void dispatch(const OperatorHandle& op, Stack& stack);
  // True when dispatch() would only pass this call on, unchanged: a typed call
  // that every visible mode passes on skips the modes unboxed (Note [Modes a call
  // passes through] in dispatch_mode.cpp).
  virtual bool passes_on(const OperatorHandle& op) const {
    (void)op;
    return false;
  }
  // True when dispatch_typed() handles this call: a typed call then reaches the
  // mode as a TypedCall, unboxed (Note [Typed mode calls] in typed_call.h). Boxed
  // calls still go to dispatch().
  virtual bool takes_typed(const OperatorHandle& op) const {
    (void)op;
    return false;
  }
  // A typed call, when takes_typed(op). It must pass the call on
  // (call_next_typed()) or throw; the default passes it on.
  virtual void dispatch_typed(const OperatorHandle& op, TypedCall& call);
  // Whether a higher-order operator (cond, while_loop, ...) may run its
  // functions inline while this mode is pushed, the mode seeing their ops one by
  // one. A mode recording a replayable graph says no: a branch chosen by this
  // run's data would be baked into the graph (Note [Higher-order operators]).
  virtual bool allows_inline_higher_order_ops() const { return true; }

 protected:
  // Passes the call being dispatched on to the next mode, or to the kernels.
  void call_next(const OperatorHandle& op, Stack& stack);
  // The same for a typed call being dispatched by dispatch_typed().
  void call_next_typed(const OperatorHandle& op, TypedCall& call);
};

// Pushes a mode for the guard's scope.
class DispatchModeGuard {
 public:
  explicit DispatchModeGuard(std::shared_ptr<DispatchMode> mode);
  ~DispatchModeGuard();
  DispatchModeGuard(const DispatchModeGuard&) = delete;
  DispatchModeGuard& operator=(const DispatchModeGuard&) = delete;
};

// The number of modes pushed on this thread.
size_t dispatch_mode_stack_size();
// Whether anything watches this thread's operator calls: a pushed mode, or the
// dispatch trace. A fast path that skips the dispatcher (a cached tensor, an
// in-place add straight into a kernel) is taken only when nothing does, so a
// watcher sees every op the computation makes.
namespace detail {
// How many modes are pushed on this thread, and whether the dispatch trace is
// on (Note [Dispatch trace] in dispatcher.h): read by dispatcher_watched() on
// every call of a layer entered directly, so a plain initial-exec thread_local.
extern thread_local constinit uint32_t tls_pushed_modes __attribute__((tls_model("initial-exec")));
extern std::atomic<bool> g_dispatch_trace_enabled;
}  // namespace detail
inline bool dispatcher_watched() {
  return detail::tls_pushed_modes != 0 ||
         detail::g_dispatch_trace_enabled.load(std::memory_order_relaxed);
}
// Whether every mode pushed on this thread allows inline higher-order operators.
bool modes_allow_inline_higher_order_ops();
// The highest visible mode that does not allow them (the one a higher-order
// operator's Trace implementation records into), or nullptr.
std::shared_ptr<DispatchMode> innermost_recording_mode();

}  // namespace strata
