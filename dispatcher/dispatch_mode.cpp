#include "dispatcher/dispatch_mode.h"

#include <algorithm>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "tensor/error.h"

namespace strata {
namespace detail {
thread_local constinit uint32_t tls_pushed_modes = 0;
}  // namespace detail
namespace {

// The call a mode's dispatch() is handling, for call_next().
struct ModeFrame {
  size_t index;
  DispatchKeySet keys;
};

// See Note [Dispatch modes]: modes [0, visible) are active. A call through a
// mode reads and writes it many times, and a thread_local with a destructor is
// reached through a guard in the general-dynamic TLS model (a __tls_get_addr
// call on every access): the hot path reads a plain initial-exec pointer to it,
// set on first use.
struct ModeState {
  std::vector<std::shared_ptr<DispatchMode>> modes;
  size_t visible = 0;
  const ModeFrame* frame = nullptr;
};
thread_local ModeState tls_owner;
thread_local ModeState* tls_state __attribute__((tls_model("initial-exec"))) = nullptr;

ModeState& mode_state() {
  if (__builtin_expect(tls_state == nullptr, 0)) tls_state = &tls_owner;
  return *tls_state;
}

void set_visible(ModeState& state, size_t n) {
  state.visible = n;
  auto& local = local_dispatch_key_set();
  local.included = n > 0 ? local.included.add(DispatchKey::Mode)
                         : local.included.remove(DispatchKey::Mode);
}

class VisibleModesGuard {
 public:
  VisibleModesGuard(ModeState& state, size_t n) : state_(state), saved_(state.visible) {
    set_visible(state, n);
  }
  ~VisibleModesGuard() { set_visible(state_, std::min(saved_, state_.modes.size())); }
  VisibleModesGuard(const VisibleModesGuard&) = delete;
  VisibleModesGuard& operator=(const VisibleModesGuard&) = delete;

 private:
  ModeState& state_;
  size_t saved_;
};

// Runs f as mode i's turn at a call: the frame says which mode and keys it is
// (for its pass-on), and only the modes below it are visible meanwhile.
template <class F>
void in_mode_frame(ModeState& state, size_t i, DispatchKeySet keys, F&& f) {
  const ModeFrame frame{i, keys};
  struct RestoreFrame {
    ModeState& state;
    const ModeFrame* saved;
    ~RestoreFrame() { state.frame = saved; }
  } restore{state, state.frame};
  state.frame = &frame;
  VisibleModesGuard hide(state, i);
  f();
}

// Hands the call to the highest mode below `index`, or to the kernels.
void pass_on(size_t index, const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  ModeState& state = mode_state();
  if (index == 0) {
    VisibleModesGuard all(state, state.modes.size());
    op.redispatch_boxed(keys & DispatchKeySet::below(DispatchKey::Mode), stack);
    return;
  }
  const size_t i = index - 1;
  std::shared_ptr<DispatchMode> mode = state.modes[i];  // alive even if popped meanwhile
  in_mode_frame(state, i, keys, [&] { mode->dispatch(op, stack); });
}

// pass_on() for a typed call (Note [Typed mode calls]).
void pass_on_typed(size_t index, const OperatorHandle& op, DispatchKeySet keys, TypedCall& call) {
  ModeState& state = mode_state();
  if (index == 0) {
    VisibleModesGuard all(state, state.modes.size());
    call.run(keys & DispatchKeySet::below(DispatchKey::Mode));
    return;
  }
  const size_t i = index - 1;
  // Not a shared_ptr copy (two atomic updates a call): the scoped guard that
  // pushed the mode lives on a frame enclosing this call, so the mode outlives it.
  DispatchMode* mode = state.modes[i].get();
  in_mode_frame(state, i, keys, [&] { mode->dispatch_typed(op, call); });
}

void mode_typed(const OperatorHandle& op, DispatchKeySet keys, TypedCall& call) {
  pass_on_typed(mode_state().visible, op, keys, call);
}

void mode_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  pass_on(mode_state().visible, op, keys, stack);
}

// Note [Modes a call passes through]
// A mode such as trace()'s recorder acts on some calls only (those made with no
// transform running) and passes the others on. When every visible mode would pass
// a typed call on, and every mode is visible (so no mode's dispatch() is running,
// and the kernel would run with all of them visible anyway), the call continues
// typed below the Mode key: what call_next() would have done, without boxing it.
//
// Otherwise, when every visible mode passes the call on or takes it typed, the
// call goes down the modes as a TypedCall (Note [Typed mode calls]); only when
// some visible mode handles it boxed only is the call boxed for all of them.
PassThrough::Next mode_enter(const OperatorHandle& op, DispatchKeySet keys, DispatchKeySet& next) {
  const ModeState& state = mode_state();
  bool all_pass = state.visible == state.modes.size();
  for (size_t i = 0; i < state.visible; ++i) {
    const DispatchMode& mode = *state.modes[i];
    if (mode.passes_on(op)) continue;
    if (!mode.takes_typed(op)) return PassThrough::Next::Decline;
    all_pass = false;
  }
  if (!all_pass) return PassThrough::Next::Typed;
  next = keys & DispatchKeySet::below(DispatchKey::Mode);
  return PassThrough::Next::WithKeys;
}
void mode_leave() noexcept {}

STRATA_LIBRARY_IMPL(_, Mode, m) {
  m.fallback(KernelFunction::from_boxed_with_pass_through(&mode_fallback,
                                                          {&mode_enter, &mode_leave, &mode_typed}));
}

// The call this thread's mode is handling, copied: pass_on replaces the frame.
ModeFrame current_frame(const char* caller, const char* handler) {
  const ModeFrame* current = mode_state().frame;
  STRATA_CHECK(current != nullptr, "DispatchMode", caller, "() may only be called from ", handler,
               "() while it handles a call");
  return *current;
}

}  // namespace

void DispatchMode::dispatch(const OperatorHandle& op, Stack& stack) { call_next(op, stack); }

void DispatchMode::call_next(const OperatorHandle& op, Stack& stack) {
  const ModeFrame frame = current_frame("call_next", "dispatch");
  pass_on(frame.index, op, frame.keys, stack);
}

void DispatchMode::dispatch_typed(const OperatorHandle& op, TypedCall& call) {
  call_next_typed(op, call);
}

void DispatchMode::call_next_typed(const OperatorHandle& op, TypedCall& call) {
  const ModeFrame frame = current_frame("call_next_typed", "dispatch_typed");
  pass_on_typed(frame.index, op, frame.keys, call);
}

DispatchModeGuard::DispatchModeGuard(std::shared_ptr<DispatchMode> mode) {
  STRATA_CHECK(mode != nullptr, "DispatchModeGuard", "mode is null");
  ModeState& state = mode_state();
  state.modes.push_back(std::move(mode));
  detail::tls_pushed_modes = static_cast<uint32_t>(state.modes.size());
  set_visible(state, state.modes.size());
}

DispatchModeGuard::~DispatchModeGuard() {
  ModeState& state = mode_state();
  state.modes.pop_back();
  detail::tls_pushed_modes = static_cast<uint32_t>(state.modes.size());
  set_visible(state, std::min(state.visible, state.modes.size()));
}

size_t dispatch_mode_stack_size() { return mode_state().modes.size(); }

bool modes_allow_inline_higher_order_ops() {
  for (const auto& mode : mode_state().modes) {
    if (!mode->allows_inline_higher_order_ops()) return false;
  }
  return true;
}

std::shared_ptr<DispatchMode> innermost_recording_mode() {
  const ModeState& state = mode_state();
  for (size_t i = state.visible; i-- > 0;) {
    if (!state.modes[i]->allows_inline_higher_order_ops()) return state.modes[i];
  }
  return nullptr;
}

}  // namespace strata
