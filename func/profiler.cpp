#include "func/profiler.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <sstream>

#include "dispatcher/dispatcher.h"
#include "dispatcher/op_def.h"
#include "tensor/error.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Op names and layer paths are identifiers and slashes; quotes and backslashes
// are escaped all the same.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

size_t Profiler::row_for(const OperatorHandle& op, const LayerPath& at, const OpDef*& def) {
  auto [known, added] = defs_.try_emplace(&op.entry(), nullptr);
  if (added) known->second = find_op_def(op);
  def = known->second;
  auto [it, made] = row_index_.try_emplace({&op.entry(), at.key()}, rows_.size());
  if (made) {
    rows_.push_back(Row{.op = op.operator_name().to_string(), .level = at.to_string(),
                        .depth = at.depth()});
  }
  return it->second;
}

Profiler::Level& Profiler::level_for(const LayerPath& path) {
  auto [it, made] = level_index_.try_emplace(path.key(), levels_.size());
  if (made) levels_.push_back(Level{.level = path.to_string()});
  return levels_[it->second];
}

void Profiler::dispatch(const OperatorHandle& op, Stack& stack) {
  const LayerPath here = LayerPath::current();
  const OpDef* def = nullptr;
  const size_t row = row_for(op, here, def);
  nesting_.enter(op, def, stack);
  timings_.push_back(Timing{.start_ns = now_ns(),
                            .fallback_before = batching::loop_fallback_calls_on_this_thread()});
  try {
    call_next(op, stack);
  } catch (...) {
    timings_.pop_back();
    nesting_.abandon();
    throw;
  }
  const int64_t took = now_ns() - timings_.back().start_ns;
  const Timing timing = timings_.back();
  timings_.pop_back();
  const uint64_t fallback = batching::loop_fallback_calls_on_this_thread() - timing.fallback_before;
  const CallNesting::Left left = nesting_.leave(stack);

  Row& r = rows_[row];
  ++r.calls;
  r.time_ns += took;
  r.self_ns += took - timing.inner_ns;
  r.loop_fallback_calls += static_cast<int64_t>(fallback - timing.inner_fallback);
  if (left.counted) {
    r.flops += left.flops;
    level_for(left.issued_at).flops += left.flops;
  }
  if (!timings_.empty()) {
    timings_.back().inner_ns += took;
    timings_.back().inner_fallback += fallback;
  } else {
    Level& level = level_for(here);
    ++level.root_calls;
    level.time_ns += took;
  }
}

std::vector<Profiler::Row> Profiler::rows() const { return rows_; }

std::vector<Profiler::Level> Profiler::levels() const { return levels_; }

int64_t Profiler::total_flops() const {
  int64_t sum = 0;
  for (const Level& level : levels_) sum += level.flops;
  return sum;
}

int64_t Profiler::loop_fallback_calls() const {
  int64_t sum = 0;
  for (const Row& row : rows_) sum += row.loop_fallback_calls;
  return sum;
}

std::string Profiler::to_string() const {
  std::vector<const Row*> sorted;
  size_t op_width = 2, level_width = 5;
  for (const Row& row : rows_) {
    sorted.push_back(&row);
    op_width = std::max(op_width, row.op.size());
    level_width = std::max(level_width, row.level.size());
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Row* a, const Row* b) { return a->self_ns > b->self_ns; });
  std::ostringstream out;
  const int ow = static_cast<int>(op_width) + 2, lw = static_cast<int>(level_width) + 2;
  out << std::left << std::setw(ow) << "op" << std::setw(lw) << "level" << std::right
      << std::setw(8) << "calls" << std::setw(12) << "time us" << std::setw(12) << "self us"
      << std::setw(14) << "FLOPs" << std::setw(10) << "loop fb" << "\n";
  out << std::fixed << std::setprecision(1);
  for (const Row* row : sorted) {
    out << std::left << std::setw(ow) << row->op << std::setw(lw) << row->level << std::right
        << std::setw(8) << row->calls << std::setw(12) << static_cast<double>(row->time_ns) / 1e3
        << std::setw(12) << static_cast<double>(row->self_ns) / 1e3 << std::setw(14) << row->flops
        << std::setw(10) << row->loop_fallback_calls << "\n";
  }
  out << "\n" << std::left << std::setw(lw) << "issued at" << std::right << std::setw(10)
      << "root calls" << std::setw(12) << "time us" << std::setw(14) << "FLOPs" << "\n";
  for (const Level& level : levels_) {
    out << std::left << std::setw(lw) << level.level << std::right << std::setw(10)
        << level.root_calls << std::setw(12) << static_cast<double>(level.time_ns) / 1e3
        << std::setw(14) << level.flops << "\n";
  }
  return out.str();
}

std::string Profiler::to_json() const {
  int64_t total_ns = 0;
  for (const Level& level : levels_) total_ns += level.time_ns;
  std::ostringstream out;
  out << "{\"total_ns\": " << total_ns << ", \"total_flops\": " << total_flops()
      << ", \"loop_fallback_calls\": " << loop_fallback_calls() << ",\n \"ops\": [";
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    out << (i > 0 ? ",\n  " : "\n  ") << "{\"op\": " << quoted(r.op)
        << ", \"level\": " << quoted(r.level) << ", \"depth\": " << r.depth
        << ", \"calls\": " << r.calls << ", \"time_ns\": " << r.time_ns
        << ", \"self_ns\": " << r.self_ns << ", \"flops\": " << r.flops
        << ", \"loop_fallback_calls\": " << r.loop_fallback_calls << "}";
  }
  out << "],\n \"levels\": [";
  for (size_t i = 0; i < levels_.size(); ++i) {
    const Level& l = levels_[i];
    out << (i > 0 ? ",\n  " : "\n  ") << "{\"level\": " << quoted(l.level)
        << ", \"root_calls\": " << l.root_calls << ", \"time_ns\": " << l.time_ns
        << ", \"flops\": " << l.flops << "}";
  }
  out << "]}\n";
  return out.str();
}

void Profiler::reset() {
  STRATA_CHECK(timings_.empty(), "Profiler::reset", "called while a call is being profiled");
  row_index_.clear();
  rows_.clear();
  level_index_.clear();
  levels_.clear();
}

}  // namespace strata
