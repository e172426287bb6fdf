#include "dispatcher/dispatch_mode.h"

#include <vector>

#include "dispatcher/library.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "tensor/error.h"

namespace strata {
namespace {

thread_local std::vector<std::shared_ptr<DispatchMode>> tls_mode_stack;

void sync_mode_key() {
  auto& local = local_dispatch_key_set();
  local.included = tls_mode_stack.empty() ? local.included.remove(DispatchKey::Mode)
                                          : local.included.add(DispatchKey::Mode);
}

// Pops the top mode for its scope; see Note [Dispatch modes].
class PopModeGuard {
 public:
  PopModeGuard() : mode_(std::move(tls_mode_stack.back())) {
    tls_mode_stack.pop_back();
    sync_mode_key();
  }
  ~PopModeGuard() {
    tls_mode_stack.push_back(std::move(mode_));
    sync_mode_key();
  }
  DispatchMode& mode() { return *mode_; }

 private:
  std::shared_ptr<DispatchMode> mode_;
};

void mode_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  if (tls_mode_stack.empty()) {
    // Only reachable if a caller put Mode in the key set by hand: pass on.
    op.redispatch_boxed(keys & DispatchKeySet::below(DispatchKey::Mode), stack);
    return;
  }
  PopModeGuard guard;
  guard.mode().dispatch(op, stack);
}

STRATA_LIBRARY_IMPL(_, Mode, m) { m.fallback(KernelFunction::from_boxed(&mode_fallback)); }

}  // namespace

void DispatchMode::dispatch(const OperatorHandle& op, Stack& stack) { op.call_boxed(stack); }

DispatchModeGuard::DispatchModeGuard(std::shared_ptr<DispatchMode> mode) {
  STRATA_CHECK(mode != nullptr, "DispatchModeGuard", "mode is null");
  tls_mode_stack.push_back(std::move(mode));
  sync_mode_key();
}

DispatchModeGuard::~DispatchModeGuard() {
  tls_mode_stack.pop_back();
  sync_mode_key();
}

size_t dispatch_mode_stack_size() { return tls_mode_stack.size(); }

}  // namespace strata
