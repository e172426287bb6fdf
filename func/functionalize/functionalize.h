#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "func/functionalize/functionalize_call.h"
#include "func/tree.h"

// functionalize (see DESIGN.md, the public API): functionalize(f)(x) computes
// f(x) with every in-place op replaced by an out-of-place one (and, with
// Remove::MutationsAndViews, every view by a fresh tensor); inputs f writes are
// written back once, at the end.

namespace strata {
namespace functionalization::detail {

template <class F>
class FunctionalizeTransform {
 public:
  FunctionalizeTransform(F f, Remove remove) : f_(std::move(f)), remove_(remove) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    FunctionalizeCall call(remove_);
    std::tuple<Args...> wrapped{tree::map(args, [&](const Tensor& t) { return call.wrap(t); })...};
    using Out = std::decay_t<decltype(std::apply(f_, wrapped))>;
    static_assert(!std::is_void_v<Out>, "functionalize: the function must return its results");
    const Out out = std::apply(f_, wrapped);
    Out result = tree::map(out, [&](const Tensor& t) { return call.unwrap_output(t); });
    call.finish();
    return result;
  }

 private:
  mutable F f_;
  Remove remove_;
};

}  // namespace functionalization::detail

template <class F>
auto functionalize(F f, Remove remove = Remove::Mutations) {
  return functionalization::detail::FunctionalizeTransform<F>(std::move(f), remove);
}

}  // namespace strata
