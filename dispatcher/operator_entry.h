#pragma once

#include <array>
#include <atomic>
#include <list>
#include <memory>
#include <optional>
#include <string>

#include "dispatcher/function_schema.h"
#include "dispatcher/kernel_function.h"
#include "tensor/dispatch_key.h"

namespace strata {

class Dispatcher;
class OperatorEntry;
namespace detail {
void check_typed_signature(const OperatorEntry& op, const boxing::CppSignature& sig);
}  // namespace detail

// One operator overload: its schema, every kernel registered for it (per key,
// alias keys included), and the dense dispatch table computed from them.
//
// Note [Dispatch table resolution]
// For each runtime key k the table holds the first of:
//   1. a kernel registered for k itself;
//   2. a CompositeExplicitAutograd kernel, if k is a backend key (or Undefined);
//   3. a CompositeImplicitAutograd kernel, if k is a backend key or Undefined, or
//      if k is an autograd/Batched/Functionalize key and the op has no backend kernel
//      (a real backend kernel means the decomposition is not the truth for
//      autograd: its formula or fallback must be used instead);
//   4. an Autograd alias kernel, if k is an autograd key;
//   5. the dispatcher's backend fallback for k;
//   6. otherwise a kernel that throws, naming the op, the key and the keys that
//      do have kernels.
// A fallthrough chosen by these rules removes k from the op's non-fallthrough
// set, so calls never land on it. The table is recomputed on every registration.
// Readers load table slots atomically and the kernels they point to are never
// freed, so ops may be called while other threads register kernels.
class OperatorEntry {
 public:
  explicit OperatorEntry(OperatorName name);

  const OperatorName& operator_name() const { return name_; }
  bool has_schema() const { return schema_.has_value(); }
  const FunctionSchema& schema() const;  // throws if not def()'ed yet

  const KernelFunction& lookup(DispatchKey k) const {
    return *table_[static_cast<size_t>(k)].load(std::memory_order_acquire);
  }
  DispatchKeySet non_fallthrough_keys() const {
    return DispatchKeySet::from_bits(non_fallthrough_bits_.load(std::memory_order_relaxed));
  }
  bool has_kernel_for(DispatchKey k) const;
  // The keys (alias keys included) that have a kernel registered, for messages.
  std::string registered_keys_string() const;
  // Where the argument the op returns by reference is, for in-place/out= ops.
  std::optional<size_t> returned_argument_index() const { return returned_argument_; }
  // Positions of Tensor, Tensor? and Tensor[] arguments, for boxed key extraction.
  uint64_t tensor_argument_mask() const { return tensor_argument_mask_; }
  // Where the Generator argument of a random op is.
  std::optional<size_t> generator_argument_index() const { return generator_argument_; }
  // Whether key k runs the op's CompositeImplicitAutograd decomposition (so a
  // transform at k sees the ops it decomposes into, not this one).
  bool decomposes_at(DispatchKey k) const {
    return (decomposed_bits_.load(std::memory_order_relaxed) >> static_cast<size_t>(k)) & 1;
  }
  // Whether the op returns a view of an argument (an alias it does not write).
  bool returns_view() const { return returns_view_; }

 private:
  friend class Dispatcher;
  friend void detail::check_typed_signature(const OperatorEntry&, const boxing::CppSignature&);
  struct RegisteredKernel {
    KernelFunction kernel;
    std::string debug;
  };
  using KernelList = std::list<RegisteredKernel>;

  // All called with the dispatcher's registration mutex held.
  void set_schema(FunctionSchema schema, std::string debug);
  void clear_schema();
  KernelList::iterator add_kernel(DispatchKey key, KernelFunction kernel, std::string debug);
  void remove_kernel(DispatchKey key, KernelList::iterator it);
  void check_signature(const std::shared_ptr<const boxing::CppSignature>& signature,
                       const std::string& debug);
  void check_signature_against_schema(const boxing::CppSignature& signature,
                                      const std::string& debug) const;
  void update_table(const Dispatcher& dispatcher);
  void update_slot(const Dispatcher& dispatcher, DispatchKey k);
  const KernelFunction* resolve(const Dispatcher& dispatcher, DispatchKey k) const;
  const KernelFunction* registered(DispatchKey k) const;
  bool has_backend_kernel() const;

  OperatorName name_;
  std::optional<FunctionSchema> schema_;
  std::string schema_debug_;
  std::optional<size_t> returned_argument_;
  std::optional<size_t> generator_argument_;
  bool returns_view_ = false;
  uint64_t tensor_argument_mask_ = 0;
  std::array<KernelList, kNumKeys> kernels_;
  // The C++ signature every unboxed kernel and typed handle of this op must share.
  std::shared_ptr<const boxing::CppSignature> cpp_signature_;
  std::string cpp_signature_debug_;
  KernelList retired_;  // removed kernels: kept alive for readers of old table slots
  std::array<std::atomic<const KernelFunction*>, kNumRuntimeKeys> table_;
  std::atomic<uint64_t> non_fallthrough_bits_;
  std::atomic<uint64_t> decomposed_bits_{0};
  KernelFunction missing_kernel_;
};

}  // namespace strata
