#include "func/flop_counter.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "dispatcher/dispatcher.h"
#include "dispatcher/op_def.h"
#include "transforms/layer_stack.h"

namespace strata {
namespace {

// The first defined tensor argument (or list element), or null.
const TensorImpl* first_tensor(const Stack& stack, size_t first) {
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& a = stack[i];
    if (a.is_tensor() && a.to_tensor().defined()) return a.to_tensor().impl();
    if (a.is_tensor_list()) {
      for (const Tensor& t : a.to_tensor_list()) {
        if (t.defined()) return t.impl();
      }
    }
  }
  return nullptr;
}

bool has_transform_tensor(const Stack& stack, size_t first) {
  auto is_transform = [](const Tensor& t) {
    return t.defined() && !(t.key_set() & kAllTransformKeys).empty();
  };
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& a = stack[i];
    if (a.is_tensor() && is_transform(a.to_tensor())) return true;
    if (a.is_tensor_list()) {
      for (const Tensor& t : a.to_tensor_list()) {
        if (is_transform(t)) return true;
      }
    }
  }
  return false;
}

void add_metas(const IValue& v, MetaList& out) {
  if (v.is_tensor()) {
    const Tensor& t = v.to_tensor();
    if (t.defined()) out.push_back({DimVector(t.sizes()), t.dtype()});
  } else if (v.is_tensor_list()) {
    for (const Tensor& t : v.to_tensor_list()) out.push_back({DimVector(t.sizes()), t.dtype()});
  }
}

}  // namespace

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
  const size_t nargs = op.schema().arguments().size();
  const size_t first = stack.size() - nargs;
  const bool composite = per_op.def != nullptr && per_op.def->is_composite();
  const bool has_formula = per_op.def != nullptr && per_op.def->flops.has_value();
  const bool on_transform_tensors = has_transform_tensor(stack, first);
  // The formula reads the arguments as passed; the call replaces them by its results.
  Stack args;
  if (has_formula && !composite) args.assign(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());

  const Frame frame{&op.entry(), first_tensor(stack, first)};
  if (!frames_.empty()) {
    Frame& parent = frames_.back();
    parent.saw_inner = true;
    parent.reentered = parent.reentered || (parent.op == frame.op && parent.first == frame.first);
  }
  frames_.push_back(frame);
  try {
    call_next(op, stack);
  } catch (...) {
    frames_.pop_back();
    throw;
  }
  const Frame done = frames_.back();
  frames_.pop_back();
  if (composite || done.reentered || (on_transform_tensors && done.saw_inner)) return;
  ++per_op.calls;
  if (!has_formula) return;
  MetaList outputs;
  for (size_t i = first; i < stack.size(); ++i) add_metas(stack[i], outputs);
  per_op.flops += per_op.def->flops.value(args, outputs);
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

void FlopCounter::reset() { ops_.clear(); }

}  // namespace strata
