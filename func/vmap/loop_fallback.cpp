// The loop fallback: an op without a batching rule runs once per sample and its
// outputs are stacked. Correct for every op, but B calls instead of one, so it
// warns once per op, and the test suite switches it off to prove which ops have
// rules.
#include <atomic>
#include <iostream>
#include <mutex>
#include <set>
#include <string>

#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "transforms/vmap/batching.h"

namespace strata::batching {
namespace {

std::atomic<bool> g_loop_fallback_enabled{true};
thread_local uint64_t tls_loop_fallback_calls = 0;

void warn_once(const OperatorName& name) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::string key = name.name + "." + name.overload_name;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(key).second) return;
  std::cerr << "strata warning: vmap has no batching rule for " << name.name
            << (name.overload_name.empty() ? "" : "." + name.overload_name)
            << "; it calls the op once per sample (slow)\n";
}

// Slices sample `b` out of every argument batched at `level`.
void select_sample(Stack& stack, size_t first, int64_t level, int64_t b) {
  auto slice = [&](Tensor& t) {
    if (BatchedTensorImpl* bt = batched_at_level(t, level)) t = bt->value().select(bt->bdim(), b);
  };
  for (size_t i = first; i < stack.size(); ++i) {
    if (stack[i].is_tensor()) {
      slice(stack[i].to_tensor());
    } else if (stack[i].is_tensor_list()) {
      for (Tensor& t : stack[i].to_tensor_list()) slice(t);
    }
  }
}

Tensor stack_samples(std::vector<Tensor>& samples, int64_t level) {
  for (const Tensor& t : samples) {
    if (!t.defined()) return Tensor();
  }
  return make_batched(stack(samples, 0), 0, level);
}

void loop_fallback(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  const OperatorName& name = op.operator_name();
  const VmapLevel at = current_vmap_level(name.name.c_str());
  // Nothing batched at this level (constants, or tensors of outer levels): one call does.
  if (!any_batched_argument(stack, stack.size() - op.schema().arguments().size(), at.level)) {
    call_below(op, stack);
    return;
  }
  STRATA_CHECK(loop_fallback_enabled(), name.name.c_str(), "has no batching rule (",
               describe_layer_stack(), ") and the vmap loop fallback is switched off");
  warn_once(name);
  ++tls_loop_fallback_calls;
  call_per_sample(op, stack, at);
}

STRATA_LIBRARY_IMPL(_, Batched, m) { m.fallback(KernelFunction::from_boxed(&loop_fallback)); }

}  // namespace

bool any_batched_argument(const Stack& stack, size_t first, int64_t level) {
  return any_tensor_argument(
      stack, first, [level](const Tensor& t) { return batched_at_level(t, level) != nullptr; });
}

void set_loop_fallback_enabled(bool enabled) { g_loop_fallback_enabled = enabled; }
bool loop_fallback_enabled() { return g_loop_fallback_enabled; }
uint64_t loop_fallback_calls_on_this_thread() { return tls_loop_fallback_calls; }

void call_per_sample(const OperatorHandle& op, Stack& stack, const VmapLevel& at,
                     const std::function<void(int64_t, Stack&)>& prepare) {
  const size_t num_args = op.schema().arguments().size();
  const size_t first = stack.size() - num_args;
  const std::optional<size_t> written = op.entry().returned_argument_index();
  Tensor self;
  if (written) {
    self = stack[first + *written].to_tensor();
    check_inplace_target(op.operator_name().name.c_str(), unwrap(self, at.level),
                         any_batched_argument(stack, first, at.level), at.batch_size);
  }
  Stack args(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
  stack.resize(first);
  std::vector<Stack> results(static_cast<size_t>(at.batch_size));
  for (int64_t b = 0; b < at.batch_size; ++b) {
    Stack& sample = results[static_cast<size_t>(b)];
    sample = args;
    select_sample(sample, 0, at.level, b);
    if (prepare) prepare(b, sample);
    call_below(op, sample);
  }
  if (written) {
    stack.push_back(self);
    return;
  }
  const size_t num_results = results.front().size();
  for (size_t r = 0; r < num_results; ++r) {
    const IValue& head = results.front()[r];
    std::vector<Tensor> samples;
    if (head.is_tensor()) {
      for (Stack& s : results) samples.push_back(std::move(s[r].to_tensor()));
      stack.push_back(stack_samples(samples, at.level));
    } else if (head.is_tensor_list()) {
      std::vector<Tensor> stacked;
      for (size_t e = 0; e < head.to_tensor_list().size(); ++e) {
        samples.clear();
        for (Stack& s : results) samples.push_back(s[r].to_tensor_list()[e]);
        stacked.push_back(stack_samples(samples, at.level));
      }
      stack.push_back(std::move(stacked));
    } else {
      stack.push_back(head);
    }
  }
}

}  // namespace strata::batching
