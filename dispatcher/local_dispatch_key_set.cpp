#include "dispatcher/local_dispatch_key_set.h"

namespace strata {

namespace detail {
thread_local LocalDispatchKeySet tls_local_dispatch_key_set
    __attribute__((tls_model("initial-exec")));
}  // namespace detail

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet keys)
    : previous_(local_dispatch_key_set().included) {
  local_dispatch_key_set().included = previous_ | keys;
}

IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() {
  local_dispatch_key_set().included = previous_;
}

ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet keys)
    : previous_(local_dispatch_key_set().excluded) {
  local_dispatch_key_set().excluded = previous_ | keys;
}

ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() {
  local_dispatch_key_set().excluded = previous_;
}

}  // namespace strata
