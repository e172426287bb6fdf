#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "dispatcher/dispatcher.h"

namespace strata {

// Ops trace() replaces by what they decompose into (Note [Trace decompositions] in
// decomposition.cpp). Keys are op names as registered: "strata::<name>" or
// "strata::<name>.<overload>".
class DecompositionTable {
 public:
  DecompositionTable() = default;
  DecompositionTable(const DecompositionTable& other);
  DecompositionTable& operator=(const DecompositionTable& other);
  DecompositionTable(DecompositionTable&&) noexcept = default;
  DecompositionTable& operator=(DecompositionTable&&) noexcept = default;
  ~DecompositionTable() = default;

  // Sets the decomposition of `name`, written with ordinary ops. Sig is the op's
  // C++ signature; throws strata::Error for an unknown op or a Sig that does not
  // match the op's schema.
  template <class Sig, class F>
  DecompositionTable& set(std::string_view name, F fn) {
    const OperatorHandle op = find_op(name);
    detail::check_typed_signature(op.entry(), detail::SignatureOf<Sig>::get());
    entries()[&op.entry()] = KernelFunction::from_unboxed(std::function<Sig>(std::move(fn)));
    return *this;
  }
  // Keeps `name` whole in the graph; true if it was in the table.
  bool erase(std::string_view name);
  bool contains(std::string_view name) const;
  size_t size() const { return entries_ != nullptr ? entries_->size() : 0; }
  // The decomposition of op, or null.
  const KernelFunction* find(const OperatorHandle& op) const;

  // Every entry of the rows' decomposition facet (core_decompositions()).
  void add_row_decompositions();

 private:
  static OperatorHandle find_op(std::string_view name);
  // The op named `name`, or null.
  static const OperatorEntry* entry_named(std::string_view name);
  using Entries = std::unordered_map<const OperatorEntry*, KernelFunction>;
  // The entries, made on the first set: an empty table (trace()'s default) is
  // made, moved and freed with no map at all.
  Entries& entries();
  // Keyed by the op's entry: the recorder looks each call's op up here.
  std::unique_ptr<Entries> entries_;
};

// Every op that has a decomposition (every composite op, and the ops whose row
// says how to write them with others), so a trace holds only the primitives the
// backends implement.
DecompositionTable core_decompositions();

}  // namespace strata
