#include "dispatcher/dispatch_mode.h"

#include <algorithm>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "tensor/error.h"

namespace strata {
namespace {

// See Note [Dispatch modes]: modes [0, tls_visible) are active.
thread_local std::vector<std::shared_ptr<DispatchMode>> tls_modes;
thread_local size_t tls_visible = 0;

// The call a mode's dispatch() is handling, for call_next().
struct ModeFrame {
  size_t index;
  DispatchKeySet keys;
};
thread_local const ModeFrame* tls_frame = nullptr;

void set_visible(size_t n) {
  tls_visible = n;
  auto& local = local_dispatch_key_set();
  local.included = n > 0 ? local.included.add(DispatchKey::Mode)
                         : local.included.remove(DispatchKey::Mode);
}

class VisibleModesGuard {
 public:
  explicit VisibleModesGuard(size_t n) : saved_(tls_visible) { set_visible(n); }
  ~VisibleModesGuard() { set_visible(std::min(saved_, tls_modes.size())); }
  VisibleModesGuard(const VisibleModesGuard&) = delete;
  VisibleModesGuard& operator=(const VisibleModesGuard&) = delete;

 private:
  size_t saved_;
};

// Hands the call to the highest mode below `index`, or to the kernels.
void pass_on(size_t index, const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  if (index == 0) {
    VisibleModesGuard all(tls_modes.size());
    op.redispatch_boxed(keys & DispatchKeySet::below(DispatchKey::Mode), stack);
    return;
  }
  const size_t i = index - 1;
  std::shared_ptr<DispatchMode> mode = tls_modes[i];  // alive even if popped meanwhile
  const ModeFrame frame{i, keys};
  const ModeFrame* saved_frame = tls_frame;
  tls_frame = &frame;
  struct RestoreFrame {
    const ModeFrame* saved;
    ~RestoreFrame() { tls_frame = saved; }
  } restore{saved_frame};
  VisibleModesGuard hide(i);
  mode->dispatch(op, stack);
}

void mode_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  pass_on(tls_visible, op, keys, stack);
}

// Note [Modes a call passes through]
// A mode such as trace()'s recorder acts on some calls only (those made with no
// transform running) and passes the others on. When every visible mode would pass
// a typed call on, and every mode is visible (so no mode's dispatch() is running,
// and the kernel would run with all of them visible anyway), the call continues
// typed below the Mode key: what call_next() would have done, without boxing it.
PassThrough::Next mode_enter(const OperatorHandle& op, DispatchKeySet keys, DispatchKeySet& next) {
  if (tls_visible != tls_modes.size()) return PassThrough::Next::Decline;
  for (size_t i = 0; i < tls_visible; ++i) {
    if (!tls_modes[i]->passes_on(op)) return PassThrough::Next::Decline;
  }
  next = keys & DispatchKeySet::below(DispatchKey::Mode);
  return PassThrough::Next::WithKeys;
}
void mode_leave() noexcept {}

STRATA_LIBRARY_IMPL(_, Mode, m) {
  m.fallback(KernelFunction::from_boxed_with_pass_through(&mode_fallback, {&mode_enter, &mode_leave}));
}

}  // namespace

void DispatchMode::dispatch(const OperatorHandle& op, Stack& stack) { call_next(op, stack); }

void DispatchMode::call_next(const OperatorHandle& op, Stack& stack) {
  STRATA_CHECK(tls_frame != nullptr, "DispatchMode",
               "call_next() may only be called from dispatch() while it handles a call");
  const ModeFrame frame = *tls_frame;
  pass_on(frame.index, op, frame.keys, stack);
}

DispatchModeGuard::DispatchModeGuard(std::shared_ptr<DispatchMode> mode) {
  STRATA_CHECK(mode != nullptr, "DispatchModeGuard", "mode is null");
  tls_modes.push_back(std::move(mode));
  set_visible(tls_modes.size());
}

DispatchModeGuard::~DispatchModeGuard() {
  tls_modes.pop_back();
  set_visible(std::min(tls_visible, tls_modes.size()));
}

size_t dispatch_mode_stack_size() { return tls_modes.size(); }

bool dispatcher_watched() {
  return !tls_modes.empty() || detail::g_dispatch_trace_enabled.load(std::memory_order_relaxed);
}

bool modes_allow_inline_higher_order_ops() {
  for (const auto& mode : tls_modes) {
    if (!mode->allows_inline_higher_order_ops()) return false;
  }
  return true;
}

std::shared_ptr<DispatchMode> innermost_recording_mode() {
  for (size_t i = tls_visible; i-- > 0;) {
    if (!tls_modes[i]->allows_inline_higher_order_ops()) return tls_modes[i];
  }
  return nullptr;
}

}  // namespace strata
