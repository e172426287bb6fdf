#pragma once

#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "func/control_flow/control_flow_ops.h"
#include "func/tree.h"

// Control flow every transform understands (see DESIGN.md, the public API):
// cond, while_loop, scan and map over trees. Each flattens its trees, calls its
// higher-order operator (func/control_flow/control_flow_ops.h) and rebuilds the
// results. Non-tensor leaves of a result come from the function's latest call.

namespace strata {

namespace control_flow::detail {

// The operands flattened into one list, and a way to rebuild them from such a list.
template <class... Operands>
struct FlatOperands {
  explicit FlatOperands(const Operands&... operands) : like(operands...) {
    std::apply([&](const auto&... o) { (append(o), ...); }, like);
  }
  template <class T>
  void append(const T& t) {
    for (Tensor& leaf : tree::flatten(t)) leaves.push_back(std::move(leaf));
  }
  std::tuple<Operands...> rebuild(const std::vector<Tensor>& flat) const {
    size_t next = 0;
    return std::apply(
        [&](const auto&... o) {
          return std::tuple<Operands...>{[&] {
            auto rebuilt = tree::unflatten_like(o, flat, next);
            next += tree::num_leaves(o);
            return rebuilt;
          }()...};
        },
        like);
  }
  std::tuple<Operands...> like;
  std::vector<Tensor> leaves;
};

}  // namespace control_flow::detail

// The taken branch's result: true_fn(operands...) if pred, else false_fn(operands...).
// pred is a 0-dim Bool tensor; under vmap it may differ per sample, and then both
// branches run and each sample takes its branch's result (their derivatives on the
// untaken lanes never reach the result). Both branches return the same tree type
// with equal shapes and dtypes. A bool pred runs one branch, as an if would.
template <class TrueFn, class FalseFn, class... Operands>
auto cond(const Tensor& pred, TrueFn&& true_fn, FalseFn&& false_fn, const Operands&... operands) {
  using Out = std::decay_t<std::invoke_result_t<TrueFn&, const Operands&...>>;
  static_assert(std::is_same_v<Out, std::decay_t<std::invoke_result_t<FalseFn&, const Operands&...>>>,
                "strata::cond: both branches must return the same type");
  const control_flow::detail::FlatOperands<Operands...> flat(operands...);
  std::optional<Out> like;
  auto flat_branch = [&](auto& branch) {
    return FlatFn([&](const std::vector<Tensor>& leaves) {
      Out out = std::apply(branch, flat.rebuild(leaves));
      std::vector<Tensor> result = tree::flatten(out);
      if (!like) like.emplace(std::move(out));
      return result;
    });
  };
  std::vector<Tensor> result =
      control_flow::cond(pred, flat_branch(true_fn), flat_branch(false_fn), flat.leaves);
  return tree::unflatten_like(*like, result);
}

template <class TrueFn, class FalseFn, class... Operands>
auto cond(bool pred, TrueFn&& true_fn, FalseFn&& false_fn, const Operands&... operands) {
  using Out = std::decay_t<std::invoke_result_t<TrueFn&, const Operands&...>>;
  static_assert(std::is_same_v<Out, std::decay_t<std::invoke_result_t<FalseFn&, const Operands&...>>>,
                "strata::cond: both branches must return the same type");
  return pred ? Out(true_fn(operands...)) : Out(false_fn(operands...));
}

// Runs body_fn on the carry while cond_fn(carry) (a 0-dim Bool tensor) holds;
// returns the last carry. body_fn returns the carry's type with the same shapes
// and dtypes. Under vmap with a per-sample predicate the loop runs until every
// sample is done; a finished sample keeps its carry.
template <class CondFn, class BodyFn, class Carry>
Carry while_loop(CondFn&& cond_fn, BodyFn&& body_fn, const Carry& init) {
  static_assert(std::is_same_v<Carry, std::decay_t<std::invoke_result_t<BodyFn&, const Carry&>>>,
                "strata::while_loop: body_fn must return the carry's type");
  Carry like = init;
  FlatFn flat_cond = [&](const std::vector<Tensor>& leaves) {
    return std::vector<Tensor>{cond_fn(tree::unflatten_like(like, leaves))};
  };
  FlatFn flat_body = [&](const std::vector<Tensor>& leaves) {
    like = body_fn(tree::unflatten_like(like, leaves));
    return tree::flatten(like);
  };
  return tree::unflatten_like(like, control_flow::while_loop(flat_cond, flat_body,
                                                             tree::flatten(init)));
}

struct ScanOptions {
  // Steps run from the last x to the first; ys stay in xs's order.
  bool reverse = false;
};

// step(carry, x) -> std::pair{carry, y} over dim 0 of every leaf of xs:
// std::pair{last carry, ys}, the ys stacked along a new dim 0. Over a length-0
// dim: std::pair{init, ys of length 0}, step run once without data (fake
// tensors, shapes only) to give the ys their shapes and dtypes; a step that
// reads values there raises a strata::Error.
template <class Step, class Carry, class Xs>
auto scan(Step&& step, const Carry& init, const Xs& xs, ScanOptions options = {}) {
  using Out = std::decay_t<std::invoke_result_t<Step&, const Carry&, const Xs&>>;
  using Y = std::decay_t<decltype(std::declval<Out>().second)>;
  static_assert(std::is_same_v<Carry, std::decay_t<decltype(std::declval<Out>().first)>>,
                "strata::scan: step must return std::pair{carry, y} with the carry's type");
  Carry carry_like = init;
  std::optional<Y> y_like;
  const size_t carry_leaves = tree::num_leaves(init);
  FlatFn flat_step = [&](const std::vector<Tensor>& leaves) {
    Out out = step(tree::unflatten_like(carry_like, leaves),
                   tree::unflatten_like(xs, leaves, carry_leaves));
    std::vector<Tensor> result = tree::flatten(out.first);
    for (Tensor& y : tree::flatten(out.second)) result.push_back(std::move(y));
    carry_like = std::move(out.first);
    if (!y_like) y_like.emplace(std::move(out.second));
    return result;
  };
  std::vector<Tensor> result =
      control_flow::scan(flat_step, tree::flatten(init), tree::flatten(xs), options.reverse);
  Carry last = tree::unflatten_like(carry_like, result);
  return std::pair{std::move(last), tree::unflatten_like(*y_like, result, carry_leaves)};
}

// f over dim 0 of every leaf of xs, one sample at a time, the results stacked
// along a new dim 0: the values of vmap(f)(xs). Over a length-0 dim, results of
// length 0 (f run once without data for their shapes and dtypes, as scan's step).
template <class F, class Xs>
auto map(F&& f, const Xs& xs) {
  using Y = std::decay_t<std::invoke_result_t<F&, const Xs&>>;
  std::optional<Y> y_like;
  FlatFn flat_f = [&](const std::vector<Tensor>& leaves) {
    Y y = f(tree::unflatten_like(xs, leaves));
    std::vector<Tensor> result = tree::flatten(y);
    if (!y_like) y_like.emplace(std::move(y));
    return result;
  };
  std::vector<Tensor> result = control_flow::map(flat_f, tree::flatten(xs));
  return tree::unflatten_like(*y_like, result);
}

}  // namespace strata
