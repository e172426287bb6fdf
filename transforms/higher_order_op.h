#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace strata {

// Note [Higher-order operators]
// A higher-order operator takes functions among its arguments (cond's branches,
// while_loop's cond and body, scan's step). It cannot be an ordinary operator:
// no schema holds a function, and a transform must decide what to do with the
// function, not only with the tensors. So it is an object with one
// implementation per key, registered with impl() (seed 002's py_impl), and a
// call picks the implementation by the top of the layer stack: Backend with no
// transform running, else the top layer's kind; but Trace whenever a dispatch
// mode that records a graph is pushed (DispatchMode::allows_inline_higher_order_ops),
// even below transforms, since an inline rule would record one run's branch. The key names the transform
// rather than a tensor dispatch key because the layer stack, not the tensors'
// keys, decides which transform sees a call first (Note [The dynamic layer stack]).
// A key with no implementation is a strata::Error naming the operator, the key
// and the layer stack, never a silent fallback: running the functions inline is
// right for grad, jvp and vmap, wrong for trace (which must record one node).
//
// Arguments and results are flat: trees are flattened by the typed front end
// (func/control_flow/) and rebuilt from the results, so the implementations are
// written once, without templates.

// A function of flat tensor lists: one of a higher-order operator's subgraphs.
using FlatFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

enum class HopKey : uint8_t { Backend, Grad, Jvp, Vmap, Functionalize, Trace, Fake };
inline constexpr size_t kNumHopKeys = 7;
const char* to_string(HopKey key);

struct HopArgs {
  std::vector<Tensor> operands;
  std::vector<FlatFn> fns;
  // Static arguments: leaf counts, flags.
  std::vector<int64_t> attrs;
};

class HigherOrderOperator {
 public:
  using Impl = std::function<std::vector<Tensor>(const HigherOrderOperator&, const HopArgs&)>;

  // `name` as "namespace::name"; it must be unique (find_higher_order_op).
  explicit HigherOrderOperator(std::string name);
  ~HigherOrderOperator();
  HigherOrderOperator(const HigherOrderOperator&) = delete;
  HigherOrderOperator& operator=(const HigherOrderOperator&) = delete;

  const std::string& name() const { return name_; }
  // Registers the implementation for `key`; a second one for the same key throws.
  HigherOrderOperator& impl(HopKey key, Impl fn);
  HigherOrderOperator& impl(std::initializer_list<HopKey> keys, const Impl& fn);
  bool has_impl(HopKey key) const { return static_cast<bool>(impls_[index(key)]); }

  // Runs the implementation of the current key (current_hop_key()).
  std::vector<Tensor> operator()(const HopArgs& args) const;
  // Runs the implementation of `key`.
  std::vector<Tensor> call(HopKey key, const HopArgs& args) const;

 private:
  static size_t index(HopKey key) { return static_cast<size_t>(key); }
  std::string name_;
  std::array<Impl, kNumHopKeys> impls_;
};

// The key a higher-order call takes now: Trace under a recording mode, else the
// top layer's transform, Backend when none runs.
HopKey current_hop_key();
// The key a call would take if no mode recorded it: the top layer's transform,
// Backend when none runs. A Trace implementation runs a call inline at this key
// when it need not record it.
HopKey inline_hop_key();
// The operator registered under `name`, or nullptr.
const HigherOrderOperator* find_higher_order_op(const std::string& name);

}  // namespace strata
