#include "dispatcher/operator_entry.h"

#include <sstream>

#include "dispatcher/dispatcher.h"
#include "tensor/error.h"

namespace strata {
namespace {

void report_missing_kernel(const OperatorHandle& op, DispatchKeySet keys, Stack&) {
  const OperatorEntry& entry = op.entry();
  DispatchKey key = keys.highest();
  std::string name = entry.operator_name().to_string();
  if (key == DispatchKey::Undefined) {
    STRATA_FAIL(name.c_str(),
                "no tensor argument selects a backend and the op has no "
                "CompositeExplicitAutograd or CompositeImplicitAutograd kernel; kernels are "
                "registered for: ",
                entry.registered_keys_string());
  }
  STRATA_FAIL(name.c_str(), "no kernel for dispatch key ", key, " (the call's keys: ", keys,
              "); kernels are registered for: ", entry.registered_keys_string(),
              ". Register one with STRATA_LIBRARY_IMPL or a fallback for ", key, ".");
}

// Whether a kernel's C++ type can carry a value of the schema's type.
bool schema_types_match(const SchemaType& schema, const SchemaType& cpp) {
  using Kind = SchemaType::Kind;
  switch (schema.kind) {
    case Kind::Layout:
    case Kind::MemoryFormat:
    case Kind::Any: return true;  // no C++ type is bound to these yet
    default: break;
  }
  if (schema.element_optional) return true;
  Kind schema_kind = schema.kind == Kind::SymInt ? Kind::Int : schema.kind;
  return schema_kind == cpp.kind && schema.is_list == cpp.is_list &&
         schema.is_optional == cpp.is_optional;
}

}  // namespace

OperatorEntry::OperatorEntry(OperatorName name)
    : name_(std::move(name)),
      non_fallthrough_bits_(DispatchKeySet::full().bits()),
      missing_kernel_(KernelFunction::from_boxed(&report_missing_kernel)) {
  for (auto& slot : table_) slot.store(&missing_kernel_, std::memory_order_relaxed);
}

const FunctionSchema& OperatorEntry::schema() const {
  STRATA_CHECK(schema_.has_value(), name_.to_string().c_str(),
               "operator has kernels but no schema; did you forget to def() it?");
  return *schema_;
}

bool OperatorEntry::has_kernel_for(DispatchKey k) const {
  return !kernels_[static_cast<size_t>(k)].empty();
}

std::string OperatorEntry::registered_keys_string() const {
  std::ostringstream out;
  bool any = false;
  for (int k = 0; k < kNumKeys; ++k) {
    if (kernels_[k].empty()) continue;
    out << (any ? ", " : "") << static_cast<DispatchKey>(k);
    any = true;
  }
  if (!any) out << "(none)";
  return out.str();
}

void OperatorEntry::set_schema(FunctionSchema schema, std::string debug) {
  const auto& args = schema.arguments();
  STRATA_CHECK(args.size() <= 64, name_.to_string().c_str(), "more than 64 arguments");
  tensor_argument_mask_ = 0;
  returned_argument_.reset();
  generator_argument_.reset();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].type.kind == SchemaType::Kind::Tensor) tensor_argument_mask_ |= uint64_t{1} << i;
    if (!returned_argument_ && args[i].alias && args[i].alias->is_write) returned_argument_ = i;
    if (!generator_argument_ && args[i].type.kind == SchemaType::Kind::Generator) {
      generator_argument_ = i;
    }
  }
  const auto& returns = schema.returns();
  returns_view_ = !returns.empty() && returns[0].alias && !returns[0].alias->is_write;
  schema_ = std::move(schema);
  schema_debug_ = std::move(debug);
  if (cpp_signature_) check_signature_against_schema(*cpp_signature_, cpp_signature_debug_);
}

void OperatorEntry::clear_schema() {
  schema_.reset();
  schema_debug_.clear();
}

void OperatorEntry::check_signature_against_schema(const boxing::CppSignature& sig,
                                                   const std::string& debug) const {
  const auto& args = schema_->arguments();
  const auto& rets = schema_->returns();
  bool ok = args.size() == sig.arguments.size() && rets.size() == sig.returns.size();
  for (size_t i = 0; ok && i < args.size(); ++i)
    ok = schema_types_match(args[i].type, sig.arguments[i]);
  for (size_t i = 0; ok && i < rets.size(); ++i)
    ok = schema_types_match(rets[i].type, sig.returns[i]);
  STRATA_CHECK(ok, name_.to_string().c_str(), "the C++ signature ", sig.text, " (", debug,
               ") does not match the schema ", schema_->to_string());
}

void OperatorEntry::check_signature(const std::shared_ptr<const boxing::CppSignature>& signature,
                                    const std::string& debug) {
  if (!signature) return;
  if (schema_) check_signature_against_schema(*signature, debug);
  if (!cpp_signature_) {
    cpp_signature_ = signature;
    cpp_signature_debug_ = debug;
    return;
  }
  STRATA_CHECK(*cpp_signature_->type == *signature->type, name_.to_string().c_str(),
               "kernel signature ", signature->text, " (", debug, ") differs from ",
               cpp_signature_->text, " (", cpp_signature_debug_, ")");
}

OperatorEntry::KernelList::iterator OperatorEntry::add_kernel(DispatchKey key,
                                                              KernelFunction kernel,
                                                              std::string debug) {
  check_signature(kernel.cpp_signature(), debug);
  KernelList& list = kernels_[static_cast<size_t>(key)];
  list.push_front(RegisteredKernel{std::move(kernel), std::move(debug)});
  return list.begin();
}

void OperatorEntry::remove_kernel(DispatchKey key, KernelList::iterator it) {
  KernelList& list = kernels_[static_cast<size_t>(key)];
  retired_.splice(retired_.end(), list, it);
  // Once no typed kernel is left, a new registration may bring another signature.
  for (const KernelList& kernels : kernels_) {
    for (const RegisteredKernel& k : kernels) {
      if (k.kernel.cpp_signature()) return;
    }
  }
  cpp_signature_.reset();
  cpp_signature_debug_.clear();
}

const KernelFunction* OperatorEntry::registered(DispatchKey k) const {
  const KernelList& list = kernels_[static_cast<size_t>(k)];
  return list.empty() ? nullptr : &list.front().kernel;
}

bool OperatorEntry::has_backend_kernel() const {
  return registered(DispatchKey::CPU) || registered(DispatchKey::CUDA) ||
         registered(DispatchKey::CompositeExplicitAutograd);
}

// See Note [Dispatch table resolution].
const KernelFunction* OperatorEntry::resolve(const Dispatcher& dispatcher, DispatchKey k) const {
  if (const KernelFunction* direct = registered(k)) return direct;
  const bool backend_like = k == DispatchKey::Undefined || is_backend_key(k);
  if (backend_like) {
    if (const KernelFunction* kernel = registered(DispatchKey::CompositeExplicitAutograd)) {
      return kernel;
    }
  }
  if (const KernelFunction* kernel = registered(DispatchKey::CompositeImplicitAutograd)) {
    const bool decomposes_here =
        is_autograd_key(k) || k == DispatchKey::Batched || k == DispatchKey::Functionalize;
    if (backend_like || (decomposes_here && !has_backend_kernel())) return kernel;
  }
  if (is_autograd_key(k)) {
    if (const KernelFunction* kernel = registered(DispatchKey::Autograd)) return kernel;
  }
  return dispatcher.backend_fallback(k);
}

void OperatorEntry::update_slot(const Dispatcher& dispatcher, DispatchKey k) {
  const KernelFunction* kernel = resolve(dispatcher, k);
  const auto index = static_cast<size_t>(k);
  uint64_t bit = DispatchKeySet(k).bits();
  uint64_t bits = non_fallthrough_bits_.load(std::memory_order_relaxed);
  bits = (kernel && kernel->is_fallthrough()) ? (bits & ~bit) : (bits | bit);
  table_[index].store(kernel ? kernel : &missing_kernel_, std::memory_order_release);
  non_fallthrough_bits_.store(bits, std::memory_order_relaxed);
  uint64_t decomposed = decomposed_bits_.load(std::memory_order_relaxed);
  const bool decomposes = kernel && kernel == registered(DispatchKey::CompositeImplicitAutograd);
  decomposed =
      decomposes ? (decomposed | (uint64_t{1} << index)) : (decomposed & ~(uint64_t{1} << index));
  decomposed_bits_.store(decomposed, std::memory_order_relaxed);
}

void OperatorEntry::update_table(const Dispatcher& dispatcher) {
  for (int k = 0; k < kNumRuntimeKeys; ++k) update_slot(dispatcher, static_cast<DispatchKey>(k));
}

}  // namespace strata
