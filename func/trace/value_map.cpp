#include "func/trace/value_map.h"

namespace strata {

thread_local std::vector<ValueMap::Slot> ValueMap::spare_;

ValueMap::ValueMap() {
  slots_.swap(spare_);
  if (slots_.size() != kInitialSlots) slots_.assign(kInitialSlots, Slot{});
}

ValueMap::~ValueMap() {
  // A grown table is freed: the spare stays small.
  if (slots_.size() != kInitialSlots || !spare_.empty()) return;
  for (size_t i = 0; i < used_; ++i) slots_[used_slots_[i]] = Slot{};
  spare_.swap(slots_);
}

}  // namespace strata
