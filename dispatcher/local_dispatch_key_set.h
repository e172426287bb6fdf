#pragma once

#include "tensor/dispatch_key.h"

namespace strata {

// Note [Thread-local key sets]
// Each thread may add keys to every call (`included`, e.g. Mode while a dispatch
// mode is active, DynamicLayerFront while a transform runs) and hide keys from
// every call (`excluded`, e.g. Batched inside a batching rule that calls ops on
// unwrapped tensors). The dispatch key of a call is the highest key of
// (tensor keys | included) - excluded. The guards below restore the previous sets
// on scope exit, also when an exception unwinds.
struct LocalDispatchKeySet {
  DispatchKeySet included{DispatchKey::BackendSelect};
  DispatchKeySet excluded;
};

namespace detail {
// initial-exec: a fixed offset from the thread pointer, no __tls_get_addr call on
// the dispatch hot path (the library is linked, not dlopen'ed).
extern thread_local LocalDispatchKeySet tls_local_dispatch_key_set
    __attribute__((tls_model("initial-exec")));
}  // namespace detail

inline LocalDispatchKeySet& local_dispatch_key_set() { return detail::tls_local_dispatch_key_set; }

class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet keys);
  explicit IncludeDispatchKeyGuard(DispatchKey key)
      : IncludeDispatchKeyGuard(DispatchKeySet(key)) {}
  ~IncludeDispatchKeyGuard();
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet previous_;
};

class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet keys);
  explicit ExcludeDispatchKeyGuard(DispatchKey key)
      : ExcludeDispatchKeyGuard(DispatchKeySet(key)) {}
  ~ExcludeDispatchKeyGuard();
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet previous_;
};

// Saves both sets and restores them on scope exit, whatever happened in between.
class LocalDispatchKeySetRestorer {
 public:
  LocalDispatchKeySetRestorer() : saved_(local_dispatch_key_set()) {}
  ~LocalDispatchKeySetRestorer() { local_dispatch_key_set() = saved_; }
  LocalDispatchKeySetRestorer(const LocalDispatchKeySetRestorer&) = delete;
  LocalDispatchKeySetRestorer& operator=(const LocalDispatchKeySetRestorer&) = delete;

 private:
  LocalDispatchKeySet saved_;
};

}  // namespace strata
