#pragma once

#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "dispatcher/boxing.h"

// Note [Typed mode calls]
// A dispatch mode that handles typed calls (DispatchMode::takes_typed) gets a
// typed call as a TypedCall instead of a boxed Stack: a view of the caller's own
// arguments, one ArgRef each (a tensor, an optional tensor or a tensor list read
// in place; anything else boxed into an IValue only when asked), and a run() that
// continues the call typed below the modes and keeps its result for the caller.
// No Stack, no IValue per tensor, no unboxing back. The view's templates are the
// few lines below; the mode's own code sees only ArgRefs.

namespace strata {

// One argument or result of a typed call, by reference (valid during the call).
struct ArgRef {
  enum class Kind : uint8_t { Tensor, OptionalTensor, TensorList, Other };
  Kind kind = Kind::Other;
  const void* ptr = nullptr;  // the Tensor, optional<Tensor>, first list element or value
  size_t size = 0;            // a tensor list's length
  IValue (*box_fn)(const ArgRef&) = nullptr;

  const Tensor& tensor() const { return *static_cast<const Tensor*>(ptr); }
  const std::optional<Tensor>& optional_tensor() const {
    return *static_cast<const std::optional<Tensor>*>(ptr);
  }
  ArrayRef<Tensor> tensor_list() const { return {static_cast<const Tensor*>(ptr), size}; }
  // The value as the boxed call would have had it on its stack.
  IValue box() const { return box_fn(*this); }
};

// A typed call handed to a dispatch mode (Note [Typed mode calls]).
class TypedCall {
 public:
  ArrayRef<ArgRef> arguments() const { return {args_, num_args_}; }
  // Continues the call with `keys` (below the Mode key), keeping its result;
  // called at most once.
  void run(DispatchKeySet keys) { run_(*this, keys); }
  // Valid after run(): one ArgRef per result (a tensor list is one).
  ArrayRef<ArgRef> results() const { return {results_, num_results_}; }

 protected:
  TypedCall(const ArgRef* args, size_t num_args, void (*run)(TypedCall&, DispatchKeySet))
      : args_(args), num_args_(num_args), run_(run) {}
  ~TypedCall() = default;
  TypedCall(const TypedCall&) = delete;
  TypedCall& operator=(const TypedCall&) = delete;

  const ArgRef* args_;
  size_t num_args_;
  void (*run_)(TypedCall&, DispatchKeySet);
  const ArgRef* results_ = nullptr;
  size_t num_results_ = 0;
};

namespace detail {

template <class T>
IValue box_ref(const ArgRef& ref) {
  return boxing::to_ivalue(*static_cast<const T*>(ref.ptr));
}
inline IValue box_list_ref(const ArgRef& ref) { return boxing::to_ivalue(ref.tensor_list()); }

template <class T>
ArgRef arg_ref(const T& v) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Tensor>) {
    return {ArgRef::Kind::Tensor, &v, 0, &box_ref<Tensor>};
  } else if constexpr (std::is_same_v<D, std::optional<Tensor>>) {
    return {ArgRef::Kind::OptionalTensor, &v, 0, &box_ref<D>};
  } else if constexpr (std::is_same_v<D, ArrayRef<Tensor>> || std::is_same_v<D, std::vector<Tensor>>) {
    return {ArgRef::Kind::TensorList, v.data(), v.size(), &box_list_ref};
  } else {
    return {ArgRef::Kind::Other, &v, 0, &box_ref<D>};
  }
}

// How a typed call holds its result until it returns it: a reference result
// (an in-place op's argument) by address, any other by value.
template <class Ret>
struct ResultSlot {
  std::optional<Ret> value;
  void set(Ret&& r) { value.emplace(std::move(r)); }
  bool empty() const { return !value.has_value(); }
  Ret take() { return std::move(*value); }
  const std::decay_t<Ret>& get() const { return *value; }
};
template <>
struct ResultSlot<void> {
  bool done = false;
};
template <class Ret>
struct ResultSlot<Ret&> {
  Ret* value = nullptr;
  void set(Ret& r) { value = &r; }
  bool empty() const { return value == nullptr; }
  Ret& take() { return *value; }
  const Ret& get() const { return *value; }
};

// "a dispatch mode returned from a typed call without running it"
[[noreturn]] void throw_typed_call_not_run();

// The TypedCall of one typed call: its arguments' refs, the continuation
// (`Continue(keys, args...)`, the handle's redispatch) and the result.
template <class Handle, class Ret, class... Args>
class TypedCallFrame final : public TypedCall {
 public:
  TypedCallFrame(const Handle& op, Args&... args)
      : TypedCall(refs_, sizeof...(Args), &run_frame), op_(op), args_(args...),
        refs_{arg_ref(args)..., ArgRef{}} {}

  // The result, once a mode has run the call.
  Ret finish() {
    if constexpr (std::is_void_v<Ret>) {
      if (!result_.done) throw_typed_call_not_run();
    } else {
      if (result_.empty()) throw_typed_call_not_run();
      return result_.take();
    }
  }

 private:
  static constexpr size_t kResults = boxing::num_results<Ret>();

  static void run_frame(TypedCall& call, DispatchKeySet keys) {
    auto& self = static_cast<TypedCallFrame&>(call);
    auto invoke = [&]<size_t... I>(std::index_sequence<I...>)->Ret {
      return self.op_.redispatch(keys, std::forward<Args>(std::get<I>(self.args_))...);
    };
    if constexpr (std::is_void_v<Ret>) {
      invoke(std::index_sequence_for<Args...>());
      self.result_.done = true;
    } else {
      self.result_.set(invoke(std::index_sequence_for<Args...>()));
      self.fill_results();
    }
  }

  void fill_results() {
    using R = std::decay_t<Ret>;
    const R& r = result_.get();
    if constexpr (requires { std::tuple_size<R>::value; }) {
      std::apply([&](const auto&... parts) {
        size_t k = 0;
        ((result_refs_[k++] = arg_ref(parts)), ...);
      }, r);
    } else {
      result_refs_[0] = arg_ref(r);
    }
    results_ = result_refs_;
    num_results_ = kResults;
  }

  const Handle& op_;
  std::tuple<Args&...> args_;
  ArgRef refs_[sizeof...(Args) + 1];
  ResultSlot<Ret> result_;
  ArgRef result_refs_[kResults + 1];
};

}  // namespace detail
}  // namespace strata
