// Note [Typed functionalize kernels]
// The functionalize interpreter works on a boxed stack: a typed call reaching it
// is boxed (a copy of every argument), each wrapper on the stack is replaced by
// its value (two more reference-count changes), and the stack is unboxed again
// below the level. For the common signatures (unary, binary, with a Scalar) each
// op row with a backend kernel gets a typed kernel at the Functionalize key
// instead, which does what process() does for it without a stack:
// - an out-of-place op: the arguments of the level read as their synced values
//   (by reference), the op called below the level, its result wrapped;
// - an in-place op (returning its first argument): when the write may go into
//   the root's memory (Note [Writing the root's memory]) and the target's value
//   is over that memory, the op runs on the values below the level and the base's
//   generation is bumped; otherwise the call is boxed for process().
// The front fallback hands a typed call to these kernels (default_process) only
// while no dispatch mode and no WriteWatch watches the level, so everything that
// must see the boxed arguments still does; the Functionalize key is added to the
// call's keys, so an op whose arguments all come from outside the level still
// has its result wrapped, as process() does.
#include <optional>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "dispatcher/op_def.h"
#include "func/functionalize/functionalize_interpreter.h"
#include "tensor/error.h"

namespace strata::functionalization {
namespace {

FunctionalizeInterpreter& functionalize_on_top(const OperatorHandle& op, int64_t& level) {
  const DynamicLayer& top = top_layer(op.operator_name().name.c_str());
  STRATA_CHECK(top.interpreter->kind() == TransformKind::Functionalize,
               op.operator_name().to_string().c_str(),
               "got a tensor of a functionalize level with ", describe_layer_stack(),
               " on top: a functionalized tensor was used outside its functionalize call");
  level = top.level;
  return static_cast<FunctionalizeInterpreter&>(*top.interpreter);
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

template <class Sig>
struct OutOfPlace;
template <class... Args>
struct OutOfPlace<Tensor(Args...)> {
  TypedOperatorHandle<Tensor(Args...)> op;

  Tensor operator()(DispatchKeySet, Args... args) const {
    int64_t level = 0;
    const Remove remove = functionalize_on_top(op, level).remove();
    // Synced with the layer on top, before it is popped for the call.
    const auto values = std::forward_as_tuple(unwrapped(args, level, remove)...);
    Tensor out;
    {
      BelowTopLayer below;
      out = std::apply([this](const auto&... v) { return op.call(v...); }, values);
    }
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
    FunctionalizeInterpreter& interpreter = functionalize_on_top(op, level);
    const Remove remove = interpreter.remove();
    FunctionalTensorWrapper* target = functional_at_level(self, level);
    if (target != nullptr && !target->may_overlap() && writes_in_place(*target->base())) {
      FunctionalBase& base = *target->base();
      sync(*target, remove);
      const Tensor& value = target->value();
      // With MutationsAndViews a view's value is a copy, not over the root's memory.
      if (value.impl()->has_storage() &&
          value.impl()->storage().get() == base.value.impl()->storage().get()) {
        const auto values = std::forward_as_tuple(unwrapped(rest, level, remove)...);
        {
          BelowTopLayer below;
          std::apply([&](const auto&... v) { op.call(value, v...); }, values);
        }
        ++base.generation;
        target->mark_current();
        return self;
      }
    }
    Stack stack;
    stack.reserve(1 + sizeof...(Rest));
    stack.push_back(boxing::to_ivalue(self));
    (stack.push_back(boxing::to_ivalue(rest)), ...);
    interpreter.process(op, keys, stack);
    return self;
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
  handles.push_back(Dispatcher::singleton().register_impl(
      op.operator_name(), DispatchKey::Functionalize,
      KernelFunction::from_unboxed(Kernel<Sig>{*typed}), "typed functionalize kernel"));
  return true;
}

template <template <class> class Kernel, class... Sigs>
void register_first_match(const OperatorHandle& op, std::vector<RegistrationHandle>& handles) {
  (void)(try_register<Kernel, Sigs>(op, handles) || ...);
}

void register_all() {
  // Kept for the program's life, as the op rows themselves.
  static auto* handles = new std::vector<RegistrationHandle>();
  const Dispatcher& dispatcher = Dispatcher::singleton();
  for (const OperatorName& name : dispatcher.registered_operators()) {
    const OpDef* def = find_op_def(name);
    const std::optional<OperatorHandle> op = dispatcher.find_schema(name);
    if (def == nullptr || def->is_composite() || !op) continue;
    const OperatorEntry& entry = op->entry();
    if (entry.returns_view() || entry.generator_argument_index() ||
        entry.has_kernel_for(DispatchKey::Functionalize) ||
        entry.has_kernel_for(DispatchKey::CompositeImplicitAutograd)) {
      continue;
    }
    const std::optional<size_t> written = entry.returned_argument_index();
    if (!written) {
      register_first_match<OutOfPlace, Tensor(const Tensor&), Tensor(const Tensor&, const Tensor&),
                           Tensor(const Tensor&, const Scalar&),
                           Tensor(const Tensor&, const Tensor&, const Scalar&)>(*op, *handles);
    } else if (*written == 0) {
      register_first_match<InPlace, const Tensor&(const Tensor&),
                           const Tensor&(const Tensor&, const Tensor&),
                           const Tensor&(const Tensor&, const Scalar&),
                           const Tensor&(const Tensor&, const Tensor&, const Scalar&)>(*op,
                                                                                       *handles);
    }
  }
}

}  // namespace

void register_typed_kernels() {
  static const bool registered = (register_all(), true);
  (void)registered;
}

}  // namespace strata::functionalization
