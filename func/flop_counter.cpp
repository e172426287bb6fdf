#include "func/flop_counter.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "dispatcher/dispatcher.h"
#include "dispatcher/op_def.h"

namespace strata {

FlopCounter::PerOp& FlopCounter::entry_for(const OperatorHandle& op) {
  auto [it, made] = ops_.try_emplace(&op.entry());
  if (made) {
    it->second.name = op.operator_name().to_string();
    it->second.def = find_op_def(op);
  }
  return it->second;
}

void FlopCounter::dispatch(const OperatorHandle& op, Stack& stack) {
  PerOp& per_op = entry_for(op);
  nesting_.enter(op, per_op.def, stack);
  try {
    call_next(op, stack);
  } catch (...) {
    nesting_.abandon();
    throw;
  }
  const CallNesting::Left left = nesting_.leave(stack);
  if (!left.counted) return;
  ++per_op.calls;
  per_op.flops += left.flops;
  auto [it, made] = levels_.try_emplace(left.issued_at.key(), left.issued_at, 0);
  it->second.second += left.flops;
}

int64_t FlopCounter::total() const {
  int64_t sum = 0;
  for (const auto& [entry, per_op] : ops_) sum += per_op.flops;
  return sum;
}

std::map<std::string, int64_t> FlopCounter::by_op() const {
  std::map<std::string, int64_t> out;
  for (const auto& [entry, per_op] : ops_) {
    if (per_op.calls > 0) out[per_op.name] += per_op.flops;
  }
  return out;
}

std::map<std::string, int64_t> FlopCounter::calls() const {
  std::map<std::string, int64_t> out;
  for (const auto& [entry, per_op] : ops_) {
    if (per_op.calls > 0) out[per_op.name] += per_op.calls;
  }
  return out;
}

std::map<std::string, int64_t> FlopCounter::by_level() const {
  std::map<std::string, int64_t> out;
  for (const auto& [key, level] : levels_) out[level.first.to_string()] += level.second;
  return out;
}

std::string FlopCounter::to_string() const {
  std::vector<const PerOp*> rows;
  size_t width = 8;
  for (const auto& [entry, per_op] : ops_) {
    if (per_op.calls == 0) continue;
    rows.push_back(&per_op);
    width = std::max(width, per_op.name.size());
  }
  std::sort(rows.begin(), rows.end(), [](const PerOp* a, const PerOp* b) {
    return a->flops != b->flops ? a->flops > b->flops : a->name < b->name;
  });
  const int64_t sum = total();
  std::ostringstream out;
  const int w = static_cast<int>(width);
  out << std::left << std::setw(w) << "op" << std::right << std::setw(10) << "calls"
      << std::setw(16) << "FLOPs" << std::setw(9) << "share" << "\n";
  auto line = [&](const std::string& name, int64_t calls, int64_t flops) {
    const double share = sum > 0 ? 100.0 * static_cast<double>(flops) / static_cast<double>(sum) : 0.0;
    out << std::left << std::setw(w) << name << std::right << std::setw(10) << calls
        << std::setw(16) << flops << std::setw(8) << std::fixed << std::setprecision(1) << share
        << "%\n";
  };
  int64_t all_calls = 0;
  for (const PerOp* row : rows) {
    line(row->name, row->calls, row->flops);
    all_calls += row->calls;
  }
  line("total", all_calls, sum);
  return out.str();
}

void FlopCounter::reset() {
  ops_.clear();
  levels_.clear();
}

}  // namespace strata
