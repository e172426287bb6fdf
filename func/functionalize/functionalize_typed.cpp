// Note [Typed functionalize kernels]
// A functionalize layer is entered directly (Note [Layers entered directly]):
// while it is on top every call's highest key is Functionalize, and every op
// has a kernel there. The interpreter's process() works on a boxed stack: a
// typed call reaching it is boxed (a copy of every argument), each wrapper on
// the stack is replaced by its value (two more reference-count changes), and
// the stack is unboxed again below the level. For the common signatures
// (unary, binary, with a Scalar; a view with int arguments) each op row with a
// backend kernel gets a typed kernel instead, which does what process() does
// for it without a stack:
// - an out-of-place op: the arguments of the level read as their synced values
//   (by reference), the op called below the level, its result wrapped (also
//   when every argument comes from outside the level, as process() does);
// - an in-place op (returning its first argument): when the write may go into
//   the root's memory (Note [Writing the root's memory]) and the target's value
//   is over that memory, the op runs on the values below the level and the base's
//   generation is bumped; otherwise the call is boxed for process();
// - a view op with one result whose elements cannot share memory: the view of
//   the synced value, wrapped as a view of the argument's root (with views
//   removed and a layer or mode below, process()); narrow, a composite that is
//   always one slice, too. With nothing below the level, a view with a
//   view_layout facet (select, slice, narrow) is made from the value's layout,
//   without a call;
// - an op defined by its decomposition: the decomposition, at the level.
// While a dispatch mode or a WriteWatch watches, each hands the call to
// process(), which shows them the boxed arguments. Every other op gets a boxed
// kernel that calls process(), and ops registered later the key's fallback.
#include <optional>
#include <vector>

#include "dispatcher/dispatch_mode.h"
#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "dispatcher/op_def.h"
#include "func/functionalize/functionalize_interpreter.h"
#include "tensor/error.h"
#include "transforms/view_tracking.h"

namespace strata::functionalization {
namespace {

// The interpreter of the top layer, a functionalize layer, and its level. Only
// a functionalize layer makes wrappers of its level, and levels are never
// reused: a first argument of the top layer's level proves its kind.
// (The op's name is read only to raise: it lies in memory a call need not touch.)
FunctionalizeInterpreter& functionalize_on_top(const OperatorHandle& op, const Tensor& first,
                                               int64_t& level) {
  const DynamicLayer* top = top_layer_or_null();
  if (top == nullptr) top = &top_layer(op.operator_name().name.c_str());
  STRATA_CHECK(functional_at_level(first, top->level) != nullptr ||
                   top->interpreter->kind() == TransformKind::Functionalize,
               op.operator_name().to_string().c_str(),
               "got a tensor of a functionalize level with ", describe_layer_stack(),
               " on top: a functionalized tensor was used outside its functionalize call");
  level = top->level;
  return static_cast<FunctionalizeInterpreter&>(*top->interpreter);
}

// The functionalize layer on top, for a call without a tensor of its level.
FunctionalizeInterpreter& functionalize_on_top(const OperatorHandle& op) {
  const bool on_top =
      !layer_stack_empty() && top_layer("").interpreter->kind() == TransformKind::Functionalize;
  STRATA_CHECK(on_top, op.operator_name().to_string().c_str(),
               "reached the Functionalize key with ",
               layer_stack_empty() ? "no transform running" : describe_layer_stack() + " on top",
               ": a functionalized tensor was used outside its functionalize call");
  return static_cast<FunctionalizeInterpreter&>(*top_layer("").interpreter);
}

// How a typed kernel goes on with a call: through process() while a dispatch
// mode or a WriteWatch watches (they must see the boxed arguments); otherwise
// below the level, which takes less when it is the only layer (below_level).
enum class Route : uint8_t { Process, BelowOnlyLayer, BelowPopped };
Route route() {
  if (dispatcher_watched() || WriteWatch::watching()) return Route::Process;
  return layer_stack_depth() == 1 ? Route::BelowOnlyLayer : Route::BelowPopped;
}

// Runs f below the level on top. With the level the only layer and no mode
// watching, hiding its key is all that takes: no tensor below carries another
// transform's key and nothing below reads the layer stack (kernels and the
// ops they call dispatch by keys alone), so the layer is not popped.
template <class F>
decltype(auto) below_level(Route route, F&& f) {
  if (route == Route::BelowOnlyLayer) {
    const ExcludeDispatchKeyGuard below(DispatchKey::Functionalize);
    return f();
  }
  BelowTopLayer below;
  return f();
}

// Every typed kernel's signature begins with a tensor.
template <class... Rest>
const Tensor& first_tensor(const Tensor& first, const Rest&...) {
  return first;
}

template <class T>
const T& unwrapped(const T& arg, int64_t, Remove) {
  return arg;
}

// The synced value of a wrapper of the level; the wrapper, which the caller
// holds, keeps it alive.
const Tensor& unwrapped(const Tensor& t, int64_t level, Remove remove) {
  FunctionalTensorWrapper* w = functional_at_level(t, level);
  if (w == nullptr) return t;
  sync(*w, remove);
  return w->value();
}

// Runs the call through process(), boxed, as if there were no typed kernel.
template <class... Args>
Stack call_process(FunctionalizeInterpreter& interpreter, const OperatorHandle& op,
                   DispatchKeySet keys, const Args&... args) {
  Stack stack;
  stack.reserve(sizeof...(Args));
  (stack.push_back(boxing::to_ivalue(args)), ...);
  interpreter.process(op, keys, stack);
  return stack;
}

template <class Sig>
struct OutOfPlace;
template <class... Args>
struct OutOfPlace<Tensor(Args...)> {
  TypedOperatorHandle<Tensor(Args...)> op;

  Tensor operator()(DispatchKeySet keys, Args... args) const {
    int64_t level = 0;
    FunctionalizeInterpreter& interpreter = functionalize_on_top(op, first_tensor(args...), level);
    const Route how = route();
    if (how == Route::Process) {
      return std::move(call_process(interpreter, op, keys, args...).back().to_tensor());
    }
    const Remove remove = interpreter.remove();
    // Synced with the layer on top, before the call goes below it.
    const auto values = std::forward_as_tuple(unwrapped(args, level, remove)...);
    Tensor out = below_level(how, [&] {
      return std::apply([this](const auto&... v) { return op.call(v...); }, values);
    });
    return out.defined() ? make_functional(std::move(out), level) : out;
  }
};

template <class Sig>
struct InPlace;
template <class... Rest>
struct InPlace<const Tensor&(const Tensor&, Rest...)> {
  TypedOperatorHandle<const Tensor&(const Tensor&, Rest...)> op;

  const Tensor& operator()(DispatchKeySet keys, const Tensor& self, Rest... rest) const {
    int64_t level = 0;
    FunctionalizeInterpreter& interpreter = functionalize_on_top(op, self, level);
    const Remove remove = interpreter.remove();
    FunctionalTensorWrapper* target = functional_at_level(self, level);
    // writes_in_place(), with route() read once.
    const Route how = route();
    if (target != nullptr && !target->may_overlap() && how == Route::BelowOnlyLayer &&
        target->base()->held_only_by_family()) {
      FunctionalBase& base = *target->base();
      sync(*target, remove);
      const Tensor& value = target->value();
      // With MutationsAndViews a view's value may be a copy, not over the root's memory.
      if (value.impl()->has_storage() &&
          value.impl()->storage().get() == base.value.impl()->storage().get()) {
        const auto values = std::forward_as_tuple(unwrapped(rest, level, remove)...);
        below_level(how,
                    [&] { std::apply([&](const auto&... v) { op.call(value, v...); }, values); });
        ++base.generation;
        target->mark_current();
        return self;
      }
    }
    call_process(interpreter, op, keys, self, rest...);
    return self;
  }
};

// The view of `value` (a tensor with storage, below the level) that `layout`
// gives: what the op would return below the level, made without a call
// (Note [View layouts]).
Tensor view_by_layout(const Tensor& value, ViewLayoutFn layout, const ViewIntArgs& args) {
  ViewLayout view = ViewLayout::of(value);
  layout(view, args);
  return Tensor(make_intrusive<TensorImpl>(value.impl()->storage(), value.dtype(), view.sizes,
                                           view.strides, view.offset));
}

// A view op with one result: a view of the synced value below the level,
// wrapped as a view of the argument's root. With views removed the value is a
// view too while nothing below the level sees it (Note [Views removed, seen
// by no one]); otherwise process() makes it by the _copy op. A view whose
// elements may share memory has no typed kernel.
template <class Sig>
struct View;
template <class... Rest>
struct View<Tensor(const Tensor&, Rest...)> {
  TypedOperatorHandle<Tensor(const Tensor&, Rest...)> op;
  // The op's view_layout facet, if it has one.
  ViewLayoutFn layout = nullptr;

  Tensor operator()(DispatchKeySet keys, const Tensor& self, Rest... rest) const {
    int64_t level = 0;
    FunctionalizeInterpreter& interpreter = functionalize_on_top(op, self, level);
    FunctionalTensorWrapper* w = functional_at_level(self, level);
    if (w == nullptr) {  // a view of a tensor from outside the level stays one
      BelowTopLayer below;
      return op.call(self, rest...);
    }
    const Route how = route();
    if (how == Route::Process ||
        (interpreter.remove() == Remove::MutationsAndViews && how != Route::BelowOnlyLayer)) {
      Stack stack = call_process(interpreter, op, keys, self, rest...);
      return std::move(stack.back().to_tensor());
    }
    sync(*w, interpreter.remove());
    static_assert(sizeof...(Rest) <= std::tuple_size_v<decltype(ViewIntArgs::values)>);
    ViewIntArgs args;
    (args.add(rest), ...);
    const Tensor& value = w->value();
    const bool by_layout =
        layout != nullptr && how == Route::BelowOnlyLayer && value.impl()->has_storage();
    Tensor out = by_layout ? view_by_layout(value, layout, args)
                           : below_level(how, [&] { return op.call(value, rest...); });
    return make_functional_view(std::move(out), *w, op, args, level);
  }
};

// An op defined by its decomposition runs it at the level, so that the level
// sees its parts (process() does the same). A view with views removed goes to
// process(), which keeps the ones with a _copy form whole.
template <class Sig>
struct Decomposed;
template <class Ret, class... Args>
struct Decomposed<Ret(Args...)> {
  TypedOperatorHandle<Ret(Args...)> op;
  const KernelFunction* decomposition;

  Ret operator()(DispatchKeySet keys, Args... args) const {
    int64_t level = 0;
    FunctionalizeInterpreter& interpreter = functionalize_on_top(op, first_tensor(args...), level);
    if (interpreter.remove() == Remove::MutationsAndViews && op.entry().returns_view()) {
      Stack stack = call_process(interpreter, op, keys, args...);
      if constexpr (std::is_reference_v<Ret>) {
        return std::get<0>(std::forward_as_tuple(args...));
      } else {
        return std::move(stack.back().to_tensor());
      }
    }
    return decomposition->call<Ret, Args...>(op, DispatchKeySet(DispatchKey::Functionalize),
                                             std::forward<Args>(args)...);
  }
};

// Whether `op`'s schema takes Sig's arguments and returns one value.
template <class Sig>
bool schema_matches(const OperatorHandle& op) {
  const boxing::CppSignature& signature = detail::SignatureOf<Sig>::get();
  const std::vector<Argument>& args = op.schema().arguments();
  if (args.size() != signature.arguments.size() || op.schema().returns().size() != 1) return false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!(args[i].type == signature.arguments[i])) return false;
  }
  return true;
}

template <template <class> class Kernel, class Sig>
bool try_register(const OperatorHandle& op, std::vector<RegistrationHandle>& handles) {
  if (!schema_matches<Sig>(op)) return false;
  std::optional<TypedOperatorHandle<Sig>> typed;
  try {
    typed.emplace(op.typed<Sig>());
  } catch (const Error&) {
    return false;  // the kernels were registered with another C++ signature
  }
  Kernel<Sig> kernel{*typed};
  if constexpr (requires { kernel.decomposition; }) {
    kernel.decomposition = &find_op_def(op)->decomposition.value.function;
  }
  if constexpr (requires { kernel.layout; }) kernel.layout = find_op_def(op)->view_layout;
  handles.push_back(Dispatcher::singleton().register_impl(
      op.operator_name(), DispatchKey::Functionalize, KernelFunction::from_unboxed(kernel),
      "typed functionalize kernel"));
  return true;
}

// process() for a call with a functionalize layer on top: the kernel of every
// op without a typed one, and the key's fallback.
void boxed_process(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  functionalize_on_top(op).process(op, keys, stack);
}

template <template <class> class Kernel, class... Sigs>
bool register_first_match(const OperatorHandle& op, std::vector<RegistrationHandle>& handles) {
  return (try_register<Kernel, Sigs>(op, handles) || ...);
}

// The signatures of the typed kernels.
template <template <class> class Kernel>
bool register_out_of_place(const OperatorHandle& op, std::vector<RegistrationHandle>& handles) {
  return register_first_match<Kernel, Tensor(const Tensor&), Tensor(const Tensor&, const Tensor&),
                              Tensor(const Tensor&, const Scalar&),
                              Tensor(const Tensor&, const Tensor&, const Scalar&)>(op, handles);
}
template <template <class> class Kernel>
bool register_in_place(const OperatorHandle& op, std::vector<RegistrationHandle>& handles) {
  return register_first_match<Kernel, const Tensor&(const Tensor&),
                              const Tensor&(const Tensor&, const Tensor&),
                              const Tensor&(const Tensor&, const Scalar&),
                              const Tensor&(const Tensor&, const Tensor&, const Scalar&)>(op,
                                                                                          handles);
}
template <template <class> class Kernel>
bool register_view(const OperatorHandle& op, std::vector<RegistrationHandle>& handles) {
  return register_first_match<
      Kernel, Tensor(const Tensor&, int64_t), Tensor(const Tensor&, int64_t, int64_t),
      Tensor(const Tensor&, int64_t, int64_t, int64_t),
      Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>, int64_t)>(
      op, handles);
}

// A composite view whose decomposition always makes one view of its argument
// (narrow: a slice) is recorded as one view step (scatter_step knows it), so
// its call enters the level once, not again for its parts.
bool always_one_view(const OperatorHandle& op) {
  return op.operator_name().name == "strata::narrow";
}

void register_all() {
  // Kept for the program's life, as the op rows themselves.
  static auto* handles = new std::vector<RegistrationHandle>();
  const Dispatcher& dispatcher = Dispatcher::singleton();
  for (const OperatorName& name : dispatcher.registered_operators()) {
    const OpDef* def = find_op_def(name);
    const std::optional<OperatorHandle> op = dispatcher.find_schema(name);
    if (def == nullptr || !op) continue;
    const OperatorEntry& entry = op->entry();
    if (entry.has_kernel_for(DispatchKey::Functionalize) || entry.generator_argument_index()) {
      continue;
    }
    const std::optional<size_t> written = entry.returned_argument_index();
    bool typed = false;
    if (always_one_view(*op)) {
      typed = register_view<View>(*op, *handles);
    } else if (def->is_composite()) {
      typed = register_out_of_place<Decomposed>(*op, *handles) ||
              register_in_place<Decomposed>(*op, *handles) ||
              register_view<Decomposed>(*op, *handles);
    } else if (entry.has_kernel_for(DispatchKey::CompositeImplicitAutograd)) {
      typed = false;
    } else if (entry.returns_view()) {
      typed = !view_may_overlap(*op) && register_view<View>(*op, *handles);
    } else if (!written) {
      typed = register_out_of_place<OutOfPlace>(*op, *handles);
    } else if (*written == 0) {
      typed = register_in_place<InPlace>(*op, *handles);
    }
    // Registered for the op itself, so that a composite op reaches process()
    // (which may keep it whole) rather than its decomposition.
    if (!typed) {
      handles->push_back(Dispatcher::singleton().register_impl(
          op->operator_name(), DispatchKey::Functionalize,
          KernelFunction::from_boxed(&boxed_process), "functionalize process()"));
    }
  }
}

STRATA_LIBRARY_IMPL(_, Functionalize, m) { m.fallback(KernelFunction::from_boxed(&boxed_process)); }

}  // namespace

void register_typed_kernels() {
  static const bool registered = (register_all(), true);
  (void)registered;
}

}  // namespace strata::functionalization
