#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "func/trace/decomposition.h"
#include "func/trace/graph.h"
#include "func/trace/recorder.h"
#include "func/tree.h"

// trace (make_fx): st::trace(f)(args...) runs f once and returns the Graph of the
// ops that reached the backend, below every transform f applies (DESIGN.md, "The
// public API, second part").

namespace strata {

// What the traced function gets for one argument: a tensor argument by reference
// (the argument itself, unless the session replaces it), any other tree rebuilt.
template <class A>
decltype(auto) traced_arg(TraceSession& session, const A& arg) {
  if constexpr (std::is_same_v<A, Tensor>) {
    return session.input(arg);
  } else {
    return tree::map(arg, [&](const Tensor& t) { return Tensor(session.input(t)); });
  }
}

template <class F>
class Traced {
 public:
  Traced(F f, TraceOptions options) : f_(std::move(f)), options_(std::move(options)) {}

  template <class... Args>
  Graph operator()(const Args&... args) const {
    TraceSession session(options_);
    // Braced: the leaves become inputs in argument order.
    std::tuple<decltype(traced_arg(session, args))...> traced_args{traced_arg(session, args)...};
    const auto out = std::apply(f_, traced_args);
    tree::for_each_leaf(out, [&](const Tensor& t) { session.output(t); });
    return session.finish();
  }

 private:
  F f_;
  TraceOptions options_;
};

template <class F>
Traced<F> trace(F f, TraceOptions options = {}) {
  return Traced<F>(std::move(f), std::move(options));
}

}  // namespace strata
