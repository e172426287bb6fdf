#pragma once

#include <tuple>
#include <utility>

#include "func/trace/decomposition.h"
#include "func/trace/graph.h"
#include "func/trace/recorder.h"
#include "func/tree.h"

// trace (make_fx): st::trace(f)(args...) runs f once and returns the Graph of the
// ops that reached the backend, below every transform f applies (DESIGN.md, "The
// public API, second part").

namespace strata {

template <class F>
class Traced {
 public:
  Traced(F f, TraceOptions options) : f_(std::move(f)), options_(std::move(options)) {}

  template <class... Args>
  Graph operator()(const Args&... args) const {
    TraceSession session(options_);
    std::tuple<Args...> traced_args{
        tree::map(args, [&](const Tensor& t) { return session.input(t); })...};
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
