#pragma once

#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "func/grad/grad.h"
#include "func/jvp/jvp_call.h"
#include "func/tree.h"
#include "ops/creation.h"

namespace strata {

// Note [Linearize by transposition]
// linearize evaluates f once and keeps only its linear part. It takes the vjp of
// f, then applies vjp_fn to a dummy cotangent u inside an outer grad level that
// differentiates with respect to u: that records g(u) = J^T u, a graph linear in
// u whose nodes keep what f's backward pass reads. jvp_fn(t) backpropagates t
// through that graph: d<g(u), t>/du = J t. Each call costs one pass over the
// recorded linear graph; f's nonlinear forward is not re-evaluated.
template <class Out, class... Primals>
class LinearizedFunction {
 public:
  LinearizedFunction(std::shared_ptr<autograd::GradCall> call, Out out_like,
                     std::vector<Tensor> transposed, std::tuple<Primals...> primals)
      : call_(std::move(call)),
        out_like_(std::move(out_like)),
        transposed_(std::move(transposed)),
        primals_(std::move(primals)) {}

  // J·tangents: one tangent tree per primal, each of its primal's shape.
  Out operator()(const Primals&... tangents) const {
    std::vector<Tensor> flat;
    (tree::for_each_leaf(tangents, [&](const Tensor& t) { flat.push_back(t); }), ...);
    std::vector<Tensor> primal_leaves;
    std::apply(
        [&](const auto&... p) {
          (tree::for_each_leaf(p, [&](const Tensor& t) { primal_leaves.push_back(t); }), ...);
        },
        primals_);
    forward::check_tangents("linearize", primal_leaves, flat);
    return tree::unflatten_like(out_like_, call_->backward(transposed_, flat));
  }

 private:
  std::shared_ptr<autograd::GradCall> call_;  // the level of the dummy cotangents
  Out out_like_;
  std::vector<Tensor> transposed_;  // J^T u, one per primal leaf
  std::tuple<Primals...> primals_;
};

// std::pair{f(primals...), jvp_fn} with jvp_fn(tangents...) = J·tangents, shaped like
// the output (Note [Linearize by transposition]).
template <class F, class... Primals>
auto linearize(F&& f, const Primals&... primals) {
  auto call = std::make_shared<autograd::GradCall>("linearize");
  auto [out, vjp_fn] = vjp(f, primals...);
  using Out = std::decay_t<decltype(out)>;
  Out cotangents = tree::map(out, [&](const Tensor& t) {
    // zeros_like runs at the level and comes back wrapped; enter takes the value.
    return call->enter(call->leave(zeros_like(t)), /*differentiable=*/true, 0);
  });
  std::vector<Tensor> transposed;
  std::apply(
      [&](const auto&... g) {
        (tree::for_each_leaf(g, [&](const Tensor& t) { transposed.push_back(t); }), ...);
      },
      vjp_fn(cotangents));
  call->end();
  LinearizedFunction<Out, Primals...> jvp_fn(call, out, std::move(transposed),
                                             std::tuple<Primals...>(primals...));
  return std::pair{std::move(out), std::move(jvp_fn)};
}

}  // namespace strata
