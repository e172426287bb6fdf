#include "dispatcher/dispatcher.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "tensor/error.h"

namespace strata {

std::string boxing::signature_text(const std::vector<SchemaType>& arguments,
                                   const std::vector<SchemaType>& returns) {
  std::string text = "(";
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i) text += ", ";
    text += arguments[i].to_string();
  }
  text += ") -> (";
  for (size_t i = 0; i < returns.size(); ++i) {
    if (i) text += ", ";
    text += returns[i].to_string();
  }
  text += ")";
  return text;
}

// ---- KernelFunction ------------------------------------------------------------

KernelFunction KernelFunction::from_boxed(BoxedKernelFn fn) {
  KernelFunction k;
  k.functor_ = reinterpret_cast<void*>(fn);
  k.boxed_ = [](void* p, const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
    reinterpret_cast<BoxedKernelFn>(p)(op, keys, stack);
  };
  return k;
}

KernelFunction KernelFunction::from_boxed_with_pass_through(BoxedKernelFn fn, PassThrough pass) {
  KernelFunction k = from_boxed(fn);
  k.pass_through_ = pass;
  return k;
}

KernelFunction KernelFunction::fallthrough() {
  // Calls never reach a fallthrough slot (its key is masked out of the op's
  // keys), except a call racing with the registration that made it one: pass on.
  KernelFunction k = from_boxed([](const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
    op.redispatch_boxed(keys.remove(keys.highest()), stack);
  });
  k.fallthrough_ = true;
  return k;
}

namespace detail {

size_t returned_argument_index(const OperatorHandle& op) {
  std::optional<size_t> index = op.entry().returned_argument_index();
  STRATA_CHECK(index.has_value(), op.operator_name().to_string().c_str(),
               "returns a reference but no argument is annotated as written (Tensor(a!))");
  return *index;
}

void throw_bad_boxed_result(const OperatorHandle& op, size_t expected, size_t got) {
  STRATA_FAIL(op.operator_name().to_string().c_str(), "a boxed kernel left ", got,
              " values on the stack; the signature expects ", expected, " results");
}

void throw_typed_call_not_run() {
  STRATA_FAIL("DispatchMode", "dispatch_typed() returned without passing the call on ",
              "(call_next_typed()) and without an exception");
}

void check_typed_signature(const OperatorEntry& op, const boxing::CppSignature& sig) {
  const std::string name = op.operator_name().to_string();
  if (op.has_schema()) op.check_signature_against_schema(sig, "typed<>() call");
  if (op.cpp_signature_) {
    STRATA_CHECK(*op.cpp_signature_->type == *sig.type, name.c_str(), "typed<> signature ",
                 sig.text, " differs from the kernels' signature ", op.cpp_signature_->text, " (",
                 op.cpp_signature_debug_, ")");
  }
}

void throw_undefined_argument(const OperatorHandle& op, size_t argument, long element) {
  const std::string name = op.operator_name().to_string();
  std::string which = "argument " + std::to_string(argument);
  if (op.has_schema() && argument < op.schema().arguments().size()) {
    which = "argument '" + op.schema().arguments()[argument].name + "' (position " +
            std::to_string(argument) + ")";
  }
  if (element >= 0) which = "element " + std::to_string(element) + " of " + which;
  STRATA_FAIL(name.c_str(), which, " is an undefined tensor (a default-constructed Tensor, ",
              "which holds no data); pass a defined tensor");
}

// ---- dispatch trace (Note [Dispatch trace]) ------------------------------------

namespace {
bool trace_from_environment() {
  const char* env = std::getenv("STRATA_SHOW_DISPATCH_TRACE");
  return env && env[0] != '\0' && env[0] != '0';
}
std::ostream* g_trace_stream = nullptr;
std::string (*g_trace_context)() = nullptr;
thread_local int tls_trace_depth = 0;
}  // namespace

std::atomic<bool> g_dispatch_trace_enabled{trace_from_environment()};

DispatchTraceScope::DispatchTraceScope(const OperatorHandle& op, DispatchKeySet keys,
                                       bool redispatch) {
  std::ostringstream line;
  line << std::string(static_cast<size_t>(2 * tls_trace_depth), ' ')
       << (redispatch ? "[redispatch] " : "[call] ") << op.operator_name().to_string()
       << " key=" << keys.highest();
  if (g_trace_context) {
    if (std::string context = g_trace_context(); !context.empty()) line << ' ' << context;
  }
  line << '\n';
  (g_trace_stream ? *g_trace_stream : std::cerr) << line.str();
  ++tls_trace_depth;
}

DispatchTraceScope::~DispatchTraceScope() { --tls_trace_depth; }

}  // namespace detail

void set_dispatch_trace(bool enabled) { detail::g_dispatch_trace_enabled.store(enabled); }
void set_dispatch_trace_stream(std::ostream* out) { detail::g_trace_stream = out; }
void set_dispatch_trace_context(std::string (*describe)()) { detail::g_trace_context = describe; }

// ---- OperatorHandle boxed calls ------------------------------------------------

namespace {

bool ivalue_matches(const IValue& v, const SchemaType& type) {
  using Kind = SchemaType::Kind;
  using Tag = IValue::Tag;
  if (v.is_none()) return type.is_optional || (type.kind == Kind::Tensor && !type.is_list);
  if (type.is_list) {
    switch (type.kind) {
      case Kind::Tensor: return v.tag() == Tag::TensorList;
      case Kind::Int:
      case Kind::SymInt: return v.tag() == Tag::IntList;
      case Kind::Float: return v.tag() == Tag::DoubleList;
      case Kind::Bool: return v.tag() == Tag::BoolList;
      default: return true;
    }
  }
  switch (type.kind) {
    case Kind::Tensor: return v.tag() == Tag::Tensor;
    case Kind::Int:
    case Kind::SymInt: return v.tag() == Tag::Int;
    case Kind::Float: return v.tag() == Tag::Double || v.tag() == Tag::Int;
    case Kind::Bool: return v.tag() == Tag::Bool;
    case Kind::Scalar: return v.is_number();
    case Kind::ScalarType: return v.tag() == Tag::ScalarType;
    case Kind::Device: return v.tag() == Tag::Device;
    case Kind::Str: return v.tag() == Tag::String;
    case Kind::Generator: return v.tag() == Tag::Generator;
    default: return true;
  }
}

// Checks the boxed arguments against the schema and returns their tensors' keys.
// Also turns an undefined tensor given for a Tensor? argument into None, so the
// kernel never sees an optional holding an undefined tensor.
DispatchKeySet check_boxed_arguments(const OperatorHandle& op, Stack& stack) {
  const FunctionSchema& schema = op.schema();
  const auto& args = schema.arguments();
  const std::string name = op.operator_name().to_string();
  STRATA_CHECK(stack.size() >= args.size(), name.c_str(), "expected ", args.size(),
               " arguments for ", schema.to_string(), " but the stack holds ", stack.size());
  const size_t first = stack.size() - args.size();
  DispatchKeySet keys;
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& v = stack[first + i];
    STRATA_CHECK(ivalue_matches(v, args[i].type), name.c_str(), "argument '", args[i].name,
                 "' (position ", i, ") expected ", args[i].type.to_string(), " but got ",
                 to_string(v.tag()), " in a boxed call of ", schema.to_string());
    bool undefined = false;
    if (v.is_tensor()) {
      detail::accumulate_required_keys(keys, undefined, v.to_tensor());
      if (undefined && !args[i].type.is_optional) detail::throw_undefined_argument(op, i, -1);
      if (undefined) stack[first + i] = IValue();
    } else if (v.is_tensor_list()) {
      detail::accumulate_required_keys(keys, undefined, v.to_tensor_list());
      if (undefined && !args[i].type.element_optional) {
        detail::throw_undefined_argument(op, i, detail::undefined_position(v.to_tensor_list()));
      }
    }
  }
  return keys;
}

void call_kernel_boxed(const OperatorHandle& op, const OperatorEntry& entry, DispatchKeySet keys,
                       bool redispatch, Stack& stack) {
  const KernelFunction& kernel = entry.lookup(keys.highest());
  if (detail::g_dispatch_trace_enabled.load(std::memory_order_relaxed)) {
    detail::DispatchTraceScope trace(op, keys, redispatch);
    kernel.call_boxed(op, keys, stack);
    return;
  }
  kernel.call_boxed(op, keys, stack);
}

}  // namespace

void OperatorHandle::call_boxed(Stack& stack) const {
  DispatchKeySet tensor_keys = check_boxed_arguments(*this, stack);
  call_kernel_boxed(*this, *entry_, compute_dispatch_keys(tensor_keys, *entry_), false, stack);
}

void OperatorHandle::redispatch_boxed(DispatchKeySet keys, Stack& stack) const {
  call_kernel_boxed(*this, *entry_, keys & entry_->non_fallthrough_keys(), true, stack);
}

// ---- RegistrationHandle ---------------------------------------------------------

RegistrationHandle& RegistrationHandle::operator=(RegistrationHandle&& other) noexcept {
  if (this != &other) {
    if (on_destroy_) on_destroy_();
    on_destroy_ = std::move(other.on_destroy_);
    other.on_destroy_ = nullptr;
  }
  return *this;
}

RegistrationHandle::~RegistrationHandle() {
  if (on_destroy_) on_destroy_();
}

// ---- Dispatcher ------------------------------------------------------------------

Dispatcher& Dispatcher::singleton() {
  // Leaked on purpose: static registrations may be destroyed after any other
  // static, and must still find the dispatcher.
  static Dispatcher* instance = new Dispatcher();
  return *instance;
}

Dispatcher::Dispatcher() {
  // Only factory ops have BackendSelect kernels; everything else skips the key.
  fallbacks_[static_cast<size_t>(DispatchKey::BackendSelect)].push_front(
      Fallback{KernelFunction::fallthrough(), "dispatcher default"});
}

OperatorEntry& Dispatcher::find_or_create(const OperatorName& name) {
  auto it = operators_.find(name);
  if (it == operators_.end()) {
    it = operators_.emplace(name, std::make_unique<OperatorEntry>(name)).first;
    it->second->update_table(*this);
  }
  return *it->second;
}

std::optional<OperatorHandle> Dispatcher::find_op(const OperatorName& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = operators_.find(name);
  if (it == operators_.end()) return std::nullopt;
  return OperatorHandle(it->second.get());
}

std::optional<OperatorHandle> Dispatcher::find_schema(const OperatorName& name) const {
  std::optional<OperatorHandle> op = find_op(name);
  if (op && !op->has_schema()) return std::nullopt;
  return op;
}

OperatorHandle Dispatcher::findSchemaOrThrow(std::string_view name,
                                             std::string_view overload_name) const {
  OperatorName op_name{std::string(name), std::string(overload_name)};
  std::optional<OperatorHandle> op = find_op(op_name);
  STRATA_CHECK(op.has_value(), "dispatcher", "could not find schema for ", op_name.to_string());
  STRATA_CHECK(op->has_schema(), "dispatcher", "could not find schema for ", op_name.to_string(),
               " but found kernels for it; did you forget to def() it?");
  return *op;
}

std::vector<OperatorName> Dispatcher::registered_operators() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OperatorName> names;
  for (const auto& [name, entry] : operators_) {
    if (entry->has_schema()) names.push_back(name);
  }
  return names;
}

RegistrationHandle Dispatcher::register_def(FunctionSchema schema, std::string debug) {
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry& entry = find_or_create(schema.operator_name());
  STRATA_CHECK(!entry.has_schema(), "dispatcher", "operator ", schema.operator_name().to_string(),
               " was already defined (", entry.schema_debug_, "); a second def() (", debug,
               ") is not allowed");
  entry.set_schema(std::move(schema), std::move(debug));
  return RegistrationHandle([this, &entry] {
    std::lock_guard<std::mutex> lock(mutex_);
    entry.clear_schema();
  });
}

RegistrationHandle Dispatcher::register_impl(const OperatorName& name, DispatchKey key,
                                             KernelFunction kernel, std::string debug) {
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry& entry = find_or_create(name);
  auto it = entry.add_kernel(key, std::move(kernel), std::move(debug));
  entry.update_table(*this);
  return RegistrationHandle([this, &entry, key, it] {
    std::lock_guard<std::mutex> lock(mutex_);
    entry.remove_kernel(key, it);
    entry.update_table(*this);
  });
}

RegistrationHandle Dispatcher::register_fallback(DispatchKey key, KernelFunction kernel,
                                                 std::string debug) {
  STRATA_CHECK(!is_alias_key(key) && key != DispatchKey::Undefined, "dispatcher",
               "a fallback must be registered for a runtime key, not ", key, " (", debug, ")");
  std::lock_guard<std::mutex> lock(mutex_);
  auto& list = fallbacks_[static_cast<size_t>(key)];
  list.push_front(Fallback{std::move(kernel), std::move(debug)});
  auto it = list.begin();
  for (auto& [name, entry] : operators_) entry->update_table(*this);
  return RegistrationHandle([this, key, it] {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& fallbacks = fallbacks_[static_cast<size_t>(key)];
    retired_fallbacks_.splice(retired_fallbacks_.end(), fallbacks, it);
    for (auto& [name, entry] : operators_) entry->update_table(*this);
  });
}

const KernelFunction* Dispatcher::backend_fallback(DispatchKey key) const {
  const auto& list = fallbacks_[static_cast<size_t>(key)];
  return list.empty() ? nullptr : &list.front().kernel;
}

}  // namespace strata
