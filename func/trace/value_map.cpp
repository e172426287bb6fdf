#include "func/trace/value_map.h"

namespace strata {

// A thread_local with a destructor is reached through a __tls_get_addr call on
// every access: a trace reads a plain initial-exec pointer to it, set on first use.
std::vector<ValueMap::Slot>& ValueMap::spare() {
  thread_local std::vector<Slot> owner;
  thread_local std::vector<Slot>* table __attribute__((tls_model("initial-exec"))) = nullptr;
  if (__builtin_expect(table == nullptr, 0)) table = &owner;
  return *table;
}

ValueMap::ValueMap() {
  slots_.swap(spare());
  if (slots_.size() != kInitialSlots) slots_.assign(kInitialSlots, Slot{});
}

ValueMap::~ValueMap() {
  // A grown table is freed: the spare stays small.
  std::vector<Slot>& spare_table = spare();
  if (slots_.size() != kInitialSlots || !spare_table.empty()) return;
  for (size_t i = 0; i < used_; ++i) slots_[used_slots_[i]] = Slot{};
  spare_table.swap(slots_);
}

}  // namespace strata
