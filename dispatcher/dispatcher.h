#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatcher/dispatch_mode.h"
#include "dispatcher/function_schema.h"
#include "dispatcher/kernel_function.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "dispatcher/operator_entry.h"
#include "dispatcher/typed_call.h"

namespace strata {

template <class Sig>
class TypedOperatorHandle;

// A stable reference to one operator overload (valid for the program's life).
class OperatorHandle {
 public:
  explicit OperatorHandle(OperatorEntry* entry) : entry_(entry) {}

  const OperatorName& operator_name() const { return entry_->operator_name(); }
  bool has_schema() const { return entry_->has_schema(); }
  const FunctionSchema& schema() const { return entry_->schema(); }
  const OperatorEntry& entry() const { return *entry_; }

  // Checks that Sig is the C++ signature the op's kernels were registered with.
  template <class Sig>
  TypedOperatorHandle<Sig> typed() const;

  // Calls the op on the arguments at the top of the stack (checked against the
  // schema: count and types), replacing them by the results.
  void call_boxed(Stack& stack) const;
  // Calls the kernel for the highest key of `keys`, skipping the key computation:
  // how a kernel at key K passes a call on, with keys & DispatchKeySet::below(K).
  void redispatch_boxed(DispatchKeySet keys, Stack& stack) const;

  friend bool operator==(const OperatorHandle& a, const OperatorHandle& b) {
    return a.entry_ == b.entry_;
  }

 protected:
  OperatorEntry* entry_;
};

namespace detail {
inline void accumulate_keys(DispatchKeySet& keys, const Tensor& t) {
  if (t.defined()) keys |= t.key_set();
}
inline void accumulate_keys(DispatchKeySet& keys, const std::optional<Tensor>& t) {
  if (t && t->defined()) keys |= t->key_set();
}
inline void accumulate_keys(DispatchKeySet& keys, ArrayRef<Tensor> list) {
  for (const Tensor& t : list) accumulate_keys(keys, t);
}
inline void accumulate_keys(DispatchKeySet& keys, const std::vector<Tensor>& list) {
  accumulate_keys(keys, ArrayRef<Tensor>(list));
}
template <class T>
void accumulate_keys(DispatchKeySet&, const T&) {}

// As accumulate_keys, and flags an undefined tensor where a schema demands one:
// a plain Tensor or an element of a Tensor[] (an optional may be empty).
inline void accumulate_required_keys(DispatchKeySet& keys, bool& undefined, const Tensor& t) {
  if (t.defined()) {
    keys |= t.key_set();
  } else {
    undefined = true;
  }
}
inline void accumulate_required_keys(DispatchKeySet& keys, bool& undefined, ArrayRef<Tensor> list) {
  for (const Tensor& t : list) accumulate_required_keys(keys, undefined, t);
}
inline void accumulate_required_keys(DispatchKeySet& keys, bool& undefined,
                                     const std::vector<Tensor>& list) {
  accumulate_required_keys(keys, undefined, ArrayRef<Tensor>(list));
}
template <class T>
void accumulate_required_keys(DispatchKeySet& keys, bool&, const T& arg) {
  accumulate_keys(keys, arg);
}

// Where an argument holds an undefined tensor: -1 for the argument itself, the
// element's index in a list, kNoUndefined when it holds none.
constexpr long kNoUndefined = -2;
inline long undefined_position(const Tensor& t) { return t.defined() ? kNoUndefined : -1; }
inline long undefined_position(ArrayRef<Tensor> list) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].defined()) return static_cast<long>(i);
  }
  return kNoUndefined;
}
inline long undefined_position(const std::vector<Tensor>& list) {
  return undefined_position(ArrayRef<Tensor>(list));
}
template <class T>
long undefined_position(const T&) {
  return kNoUndefined;
}

// "add.Tensor: argument 'other' (position 1) is an undefined tensor ..."
[[noreturn]] void throw_undefined_argument(const OperatorHandle& op, size_t argument, long element);
template <class... Args>
[[noreturn, gnu::cold, gnu::noinline]] void throw_first_undefined(const OperatorHandle& op,
                                                                  const Args&... args) {
  const long found[] = {undefined_position(args)..., kNoUndefined};
  for (size_t i = 0; i < sizeof...(Args); ++i) {
    if (found[i] != kNoUndefined) throw_undefined_argument(op, i, found[i]);
  }
  throw_undefined_argument(op, sizeof...(Args), -1);
}

// An argument as a typed call passes it on: an undefined tensor given for a
// Tensor? argument becomes None, as in a boxed call, so no kernel, batching rule or
// derivative sees an optional holding an undefined tensor.
inline const std::optional<Tensor>& none_if_undefined(const std::optional<Tensor>& t) {
  static const std::optional<Tensor> none;
  return t && !t->defined() ? none : t;
}
template <class A>
decltype(auto) pass_on(std::remove_reference_t<A>& arg) {
  if constexpr (std::is_same_v<std::remove_cvref_t<A>, std::optional<Tensor>>) {
    return none_if_undefined(arg);
  } else {
    return std::forward<A>(arg);
  }
}

// Runs a pass-through kernel's leave() when the call it wraps returns or throws.
struct LeaveOnExit {
  void (*leave)() noexcept;
  ~LeaveOnExit() { leave(); }
};

// Note [Dispatch trace]
// STRATA_SHOW_DISPATCH_TRACE=1 prints every call with the key that handles it,
// indented by nesting depth; set_dispatch_trace() toggles it at run time.
class DispatchTraceScope {
 public:
  DispatchTraceScope(const OperatorHandle& op, DispatchKeySet keys, bool redispatch);
  ~DispatchTraceScope();
};
}  // namespace detail

void set_dispatch_trace(bool enabled);
// Where the trace goes (default std::cerr); null restores the default.
void set_dispatch_trace_stream(std::ostream* out);
// Transforms describe their layer stack in trace lines through this hook.
void set_dispatch_trace_context(std::string (*describe)());

// The keys that select the kernel of a call with these tensor keys.
inline DispatchKeySet compute_dispatch_keys(DispatchKeySet tensor_keys, const OperatorEntry& op) {
  const LocalDispatchKeySet& local = local_dispatch_key_set();
  return ((tensor_keys | local.included) - local.excluded) & op.non_fallthrough_keys();
}

template <class Ret, class... Args>
class TypedOperatorHandle<Ret(Args...)> : public OperatorHandle {
 public:
  Ret call(Args... args) const {
    DispatchKeySet tensor_keys;
    bool undefined = false;
    (detail::accumulate_required_keys(tensor_keys, undefined, args), ...);
    if (__builtin_expect(undefined, 0)) detail::throw_first_undefined(*this, args...);
    return call_with_keys(compute_dispatch_keys(tensor_keys, *entry_), false,
                          detail::pass_on<Args>(args)...);
  }

  Ret redispatch(DispatchKeySet keys, Args... args) const {
    return call_with_keys(keys & entry_->non_fallthrough_keys(), true, std::forward<Args>(args)...);
  }

 private:
  friend class OperatorHandle;
  explicit TypedOperatorHandle(OperatorEntry* entry) : OperatorHandle(entry) {}

  Ret call_with_keys(DispatchKeySet keys, bool redispatch, Args... args) const {
    const KernelFunction& kernel = entry_->lookup(keys.highest());
    if (const PassThrough* pass = kernel.pass_through()) {
      DispatchKeySet next;
      const PassThrough::Next how = pass->enter(*this, keys, next);
      if (how == PassThrough::Next::Typed) {
        detail::TypedCallFrame<TypedOperatorHandle, Ret, Args...> call(*this, args...);
        pass->typed(*this, keys, call);
        return call.finish();
      }
      if (how != PassThrough::Next::Decline) {
        const detail::LeaveOnExit leave{pass->leave};
        if (how == PassThrough::Next::RecomputeKeys) {
          DispatchKeySet tensor_keys;
          (detail::accumulate_keys(tensor_keys, args), ...);
          next = compute_dispatch_keys(tensor_keys, *entry_);
        }
        return call_with_keys(next & entry_->non_fallthrough_keys(), true,
                              std::forward<Args>(args)...);
      }
    }
    if (__builtin_expect(detail::g_dispatch_trace_enabled.load(std::memory_order_relaxed), 0)) {
      detail::DispatchTraceScope trace(*this, keys, redispatch);
      return kernel.call<Ret, Args...>(*this, keys, std::forward<Args>(args)...);
    }
    return kernel.call<Ret, Args...>(*this, keys, std::forward<Args>(args)...);
  }
};

namespace detail {
// Throws unless sig matches the C++ signature the op's kernels were registered with.
void check_typed_signature(const OperatorEntry& op, const boxing::CppSignature& sig);

template <class Sig>
struct SignatureOf;
template <class Ret, class... Args>
struct SignatureOf<Ret(Args...)> {
  static const boxing::CppSignature& get() {
    static const boxing::CppSignature signature = boxing::make_cpp_signature<Ret, Args...>();
    return signature;
  }
};
}  // namespace detail

template <class Sig>
TypedOperatorHandle<Sig> OperatorHandle::typed() const {
  detail::check_typed_signature(*entry_, detail::SignatureOf<Sig>::get());
  return TypedOperatorHandle<Sig>(entry_);
}

// Removes a registration when destroyed (Library keeps these).
class RegistrationHandle {
 public:
  RegistrationHandle() = default;
  explicit RegistrationHandle(std::function<void()> on_destroy)
      : on_destroy_(std::move(on_destroy)) {}
  RegistrationHandle(RegistrationHandle&&) noexcept = default;
  RegistrationHandle& operator=(RegistrationHandle&&) noexcept;
  ~RegistrationHandle();

 private:
  std::function<void()> on_destroy_;
};

// The process-wide operator registry.
class Dispatcher {
 public:
  static Dispatcher& singleton();

  // Named as in DESIGN.md's public API. Errors: "could not find schema for
  // ns::op.overload", or "... did you forget to def() it?" when only kernels exist.
  OperatorHandle findSchemaOrThrow(std::string_view name, std::string_view overload_name) const;
  std::optional<OperatorHandle> find_schema(const OperatorName& name) const;
  // Finds an op that has kernels, with or without a schema.
  std::optional<OperatorHandle> find_op(const OperatorName& name) const;
  std::vector<OperatorName> registered_operators() const;

  RegistrationHandle register_def(FunctionSchema schema, std::string debug);
  RegistrationHandle register_impl(const OperatorName& name, DispatchKey key, KernelFunction kernel,
                                   std::string debug);
  RegistrationHandle register_fallback(DispatchKey key, KernelFunction kernel, std::string debug);

  // The backend fallback for a runtime key, or null.
  const KernelFunction* backend_fallback(DispatchKey key) const;

 private:
  Dispatcher();
  OperatorEntry& find_or_create(const OperatorName& name);

  struct Fallback {
    KernelFunction kernel;
    std::string debug;
  };
  mutable std::mutex mutex_;
  std::unordered_map<OperatorName, std::unique_ptr<OperatorEntry>> operators_;
  std::array<std::list<Fallback>, kNumRuntimeKeys> fallbacks_;
  std::list<Fallback> retired_fallbacks_;
};

}  // namespace strata
