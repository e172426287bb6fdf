#include "func/trace/decomposition.h"

#include "dispatcher/op_def.h"
#include "tensor/error.h"

// Note [Trace decompositions]
// When an op in the trace's table reaches the recorder (below every transform),
// the recorder does not record it: it calls the table's function on the same
// arguments with the recorder visible, so the ops the function calls are recorded
// instead, and decomposed again when they are in the table too. The default table
// is empty; core_decompositions() holds the decomposition facet of every OpDef row
// that has one (Note [One op, one place]).

namespace strata {

DecompositionTable::DecompositionTable(const DecompositionTable& other)
    : entries_(other.entries_ != nullptr ? std::make_unique<Entries>(*other.entries_) : nullptr) {}

DecompositionTable& DecompositionTable::operator=(const DecompositionTable& other) {
  if (this != &other) *this = DecompositionTable(other);
  return *this;
}

DecompositionTable::Entries& DecompositionTable::entries() {
  if (entries_ == nullptr) entries_ = std::make_unique<Entries>();
  return *entries_;
}

OperatorHandle DecompositionTable::find_op(std::string_view name) {
  const OperatorName op_name = parse_operator_name(name);
  const std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(op_name);
  STRATA_CHECK(op.has_value(), "DecompositionTable", "no operator is registered as '", name, "'");
  return *op;
}

const OperatorEntry* DecompositionTable::entry_named(std::string_view name) {
  const std::optional<OperatorHandle> op =
      Dispatcher::singleton().find_schema(parse_operator_name(name));
  return op.has_value() ? &op->entry() : nullptr;
}

bool DecompositionTable::erase(std::string_view name) {
  const OperatorEntry* entry = entry_named(name);
  return entry != nullptr && entries_ != nullptr && entries_->erase(entry) > 0;
}

bool DecompositionTable::contains(std::string_view name) const {
  const OperatorEntry* entry = entry_named(name);
  return entry != nullptr && entries_ != nullptr && entries_->count(entry) > 0;
}

const KernelFunction* DecompositionTable::find(const OperatorHandle& op) const {
  if (entries_ == nullptr || entries_->empty()) return nullptr;
  const auto it = entries_->find(&op.entry());
  return it == entries_->end() ? nullptr : &it->second;
}

void DecompositionTable::add_row_decompositions() {
  for (const RegisteredOpDef& row : registered_op_defs()) {
    if (row.def->decomposition.has_value()) {
      entries()[&find_op(row.name).entry()] = row.def->decomposition.value.function;
    }
  }
}

DecompositionTable core_decompositions() {
  DecompositionTable table;
  table.add_row_decompositions();
  return table;
}

}  // namespace strata
