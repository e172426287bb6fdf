#pragma once

#include <memory>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "dispatcher/boxing.h"
#include "dispatcher/ivalue.h"
#include "tensor/dispatch_key.h"

namespace strata {

class OperatorHandle;
class TypedCall;

// A boxed kernel handles any operator: its arguments are the last
// op.schema().arguments().size() values of the stack, which it replaces by the results.
using BoxedKernelFn = void (*)(const OperatorHandle& op, DispatchKeySet keys, Stack& stack);

namespace detail {
template <class F>
struct FunctionTraits : FunctionTraits<decltype(&std::decay_t<F>::operator())> {};
template <class R, class... A>
struct FunctionTraits<R (*)(A...)> {
  using Return = R;
  using Args = std::tuple<A...>;
};
template <class R, class C, class... A>
struct FunctionTraits<R (C::*)(A...) const> : FunctionTraits<R (*)(A...)> {};
template <class R, class C, class... A>
struct FunctionTraits<R (C::*)(A...)> : FunctionTraits<R (*)(A...)> {};

// Index of the argument an in-place or out= operator returns by reference.
size_t returned_argument_index(const OperatorHandle& op);
[[noreturn]] void throw_bad_boxed_result(const OperatorHandle& op, size_t expected, size_t got);
}  // namespace detail

// Note [Pass-through kernels]
// Some kernels only change thread-local state and hand the call on: the layer
// stack's front fallback (enable this layer's keys) and, for most layers, its
// back fallback (pop the layer). Registered with a PassThrough, a typed call
// runs them without boxing its arguments: enter() sets the state up and says
// how the call continues, leave() undoes it, also when the call throws. enter()
// may decline for a call, which then takes the boxed kernel as usual, or hand it
// to `typed` as a TypedCall (the Mode key's kernel: Note [Typed mode calls]).
struct PassThrough {
  enum class Next : uint8_t {
    Decline,        // run the boxed kernel instead
    WithKeys,       // continue with the keys enter() wrote
    RecomputeKeys,  // continue with keys computed afresh from the arguments
    Typed,          // call typed(), without leave()
  };
  Next (*enter)(const OperatorHandle& op, DispatchKeySet keys, DispatchKeySet& next_keys);
  void (*leave)() noexcept;
  void (*typed)(const OperatorHandle& op, DispatchKeySet keys, TypedCall& call) = nullptr;
};

// Note [Kernel calling conventions]
// A kernel is registered unboxed (a function or lambda with the operator's C++
// signature, optionally taking the DispatchKeySet first so it can redispatch) or
// boxed (BoxedKernelFn). Either can be called either way: an unboxed kernel is
// boxed automatically from its signature, and a typed call of a boxed kernel
// packs its arguments into a Stack. The unboxed path is one indirect call into a
// trampoline that calls the user's function: no allocation, no boxing.
class KernelFunction {
 public:
  KernelFunction() = default;

  static KernelFunction from_boxed(BoxedKernelFn fn);
  // A boxed callable with state, e.g. a capturing lambda.
  template <class F>
  static KernelFunction from_boxed_functor(F functor);
  template <class F>
  static KernelFunction from_unboxed(F function);
  // Registered for a key, it makes calls skip that key as if it were not in the set.
  static KernelFunction fallthrough();
  // A boxed kernel that typed calls may skip with `pass` (Note [Pass-through kernels]).
  static KernelFunction from_boxed_with_pass_through(BoxedKernelFn fn, PassThrough pass);

  bool valid() const { return boxed_ != nullptr; }
  bool is_fallthrough() const { return fallthrough_; }
  bool has_unboxed() const { return unboxed_ != nullptr; }
  const PassThrough* pass_through() const { return pass_through_.enter ? &pass_through_ : nullptr; }
  // Null for boxed kernels, which accept any signature.
  const std::shared_ptr<const boxing::CppSignature>& cpp_signature() const { return signature_; }

  void call_boxed(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) const {
    boxed_(functor_, op, keys, stack);
  }

  template <class Ret, class... Args>
  Ret call(const OperatorHandle& op, DispatchKeySet keys, Args&&... args) const {
    if (__builtin_expect(unboxed_ != nullptr, 1)) {
      using Trampoline = Ret (*)(void*, DispatchKeySet, Args...);
      return reinterpret_cast<Trampoline>(unboxed_)(functor_, keys, std::forward<Args>(args)...);
    }
    return call_through_boxed<Ret, Args...>(op, keys, std::forward<Args>(args)...);
  }

 private:
  using InternalBoxedFn = void (*)(void* functor, const OperatorHandle&, DispatchKeySet, Stack&);

  template <class Ret, class... Args>
  Ret call_through_boxed(const OperatorHandle& op, DispatchKeySet keys, Args&&... args) const;

  void* functor_ = nullptr;
  std::shared_ptr<void> functor_owner_;
  InternalBoxedFn boxed_ = nullptr;
  void* unboxed_ = nullptr;
  std::shared_ptr<const boxing::CppSignature> signature_;
  PassThrough pass_through_{};
  bool fallthrough_ = false;
};

namespace detail {

template <class F, bool kTakesKeys, class Ret, class... Args>
struct UnboxedKernel {
  static F& functor(void* p) { return *static_cast<F*>(p); }

  static Ret call(void* p, DispatchKeySet keys, Args... args) {
    if constexpr (kTakesKeys) {
      return functor(p)(keys, std::forward<Args>(args)...);
    } else {
      (void)keys;
      return functor(p)(std::forward<Args>(args)...);
    }
  }

  static void call_boxed(void* p, const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
    (void)op;
    constexpr size_t n = sizeof...(Args);
    const size_t first = stack.size() - n;
    auto invoke = [&]<size_t... I>(std::index_sequence<I...>)->decltype(auto) {
      return call(p, keys, boxing::FromIValue<std::decay_t<Args>>::get(stack[first + I])...);
    };
    if constexpr (std::is_void_v<Ret>) {
      invoke(std::index_sequence_for<Args...>());
      stack.resize(first);
    } else {
      // Copy the result out before the arguments it may refer to are dropped.
      std::decay_t<Ret> result = invoke(std::index_sequence_for<Args...>());
      stack.resize(first);
      boxing::push_results(stack, std::move(result));
    }
  }
};

template <class F, class Ret, class ArgsTuple>
struct MakeUnboxed;
template <class F, class Ret, class First, class... Rest>
struct MakeUnboxed<F, Ret, std::tuple<First, Rest...>> {
  static constexpr bool kTakesKeys = std::is_same_v<std::decay_t<First>, DispatchKeySet>;
  using Kernel = std::conditional_t<kTakesKeys, UnboxedKernel<F, true, Ret, Rest...>,
                                    UnboxedKernel<F, false, Ret, First, Rest...>>;
  static boxing::CppSignature signature() {
    if constexpr (kTakesKeys) {
      return boxing::make_cpp_signature<Ret, Rest...>();
    } else {
      return boxing::make_cpp_signature<Ret, First, Rest...>();
    }
  }
};
template <class F, class Ret>
struct MakeUnboxed<F, Ret, std::tuple<>> {
  using Kernel = UnboxedKernel<F, false, Ret>;
  static boxing::CppSignature signature() { return boxing::make_cpp_signature<Ret>(); }
};

}  // namespace detail

template <class F>
KernelFunction KernelFunction::from_unboxed(F function) {
  using Traits = detail::FunctionTraits<F>;
  using Make = detail::MakeUnboxed<F, typename Traits::Return, typename Traits::Args>;
  using Kernel = typename Make::Kernel;
  KernelFunction k;
  auto owner = std::make_shared<F>(std::move(function));
  k.functor_ = owner.get();
  k.functor_owner_ = std::move(owner);
  k.unboxed_ = reinterpret_cast<void*>(&Kernel::call);
  k.boxed_ = &Kernel::call_boxed;
  k.signature_ = std::make_shared<const boxing::CppSignature>(Make::signature());
  return k;
}

template <class F>
KernelFunction KernelFunction::from_boxed_functor(F functor) {
  KernelFunction k;
  auto owner = std::make_shared<F>(std::move(functor));
  k.functor_ = owner.get();
  k.functor_owner_ = std::move(owner);
  k.boxed_ = [](void* p, const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
    (*static_cast<F*>(p))(op, keys, stack);
  };
  return k;
}

template <class Ret, class... Args>
Ret KernelFunction::call_through_boxed(const OperatorHandle& op, DispatchKeySet keys,
                                       Args&&... args) const {
  Stack stack;
  stack.reserve(sizeof...(Args));
  (stack.push_back(boxing::to_ivalue(args)), ...);
  call_boxed(op, keys, stack);
  constexpr size_t expected = boxing::num_results<Ret>();
  if (stack.size() != expected) detail::throw_bad_boxed_result(op, expected, stack.size());
  if constexpr (std::is_void_v<Ret>) {
    return;
  } else if constexpr (std::is_reference_v<Ret>) {
    // In-place and out= ops return one of their arguments; hand back that one.
    size_t wanted = detail::returned_argument_index(op);
    size_t index = 0;
    const std::decay_t<Ret>* chosen = nullptr;
    auto pick = [&](const auto& arg) {
      if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, std::decay_t<Ret>>) {
        if (index == wanted) chosen = &arg;
      }
      ++index;
    };
    (pick(args), ...);
    return *chosen;
  } else {
    return boxing::pop_result<Ret>(stack, 0);
  }
}

}  // namespace strata
