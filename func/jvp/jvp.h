#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "func/grad/grad.h"
#include "func/jvp/jvp_call.h"
#include "func/tree.h"

// Forward mode: jvp (see DESIGN.md, the public API).

namespace strata {

namespace forward::detail {

template <class... P, class... T, size_t... K>
std::tuple<P...> enter_arguments(JvpCall& call, const std::tuple<P...>& primals,
                                 const std::tuple<T...>& tangents, std::index_sequence<K...>) {
  auto enter_one = [&]<size_t Index>() {
    const auto& primal = std::get<Index>(primals);
    const std::vector<Tensor> flat_tangents = tree::flatten(std::get<Index>(tangents));
    call.check_leaf_count(Index, tree::num_leaves(primal), flat_tangents.size());
    size_t next = 0;
    return tree::map(
        primal, [&](const Tensor& leaf) { return call.enter(leaf, flat_tangents[next++], Index); });
  };
  return std::tuple<P...>{enter_one.template operator()<K>()...};
}

template <bool kAux, class F, class... P, class... T>
auto jvp(const char* transform, F& f, const std::tuple<P...>& primals,
         const std::tuple<T...>& tangents) {
  static_assert(sizeof...(P) == sizeof...(T), "jvp: give one tangent per primal");
  static_assert((std::is_same_v<P, T> && ...),
                "jvp: each tangent must have its primal's type (the same tree shape)");
  JvpCall call(transform);
  auto wrapped = enter_arguments(call, primals, tangents, std::index_sequence_for<P...>());
  auto out = call_in_transform(transform, [&] { return std::apply(f, wrapped); });
  if constexpr (kAux) {
    call.end(tree::flatten(std::get<0>(out)));
  } else {
    call.end(tree::flatten(out));
  }
  auto primal = [&](const Tensor& t) { return call.primal(t); };
  auto tangent = [&](const Tensor& t) { return call.tangent(t); };
  if constexpr (kAux) {
    const auto& [value, aux] = out;
    return std::tuple{tree::map(value, primal), tree::map(value, tangent), tree::map(aux, primal)};
  } else {
    return std::pair{tree::map(out, primal), tree::map(out, tangent)};
  }
}

}  // namespace forward::detail

// The Jacobian-vector product of f at `primals` along `tangents` (one tree per
// primal argument, each of its primal's shape): std::pair{f(primals...), J·tangents},
// the second shaped like the first. Every tensor leaf of the primals gets its tangent.
template <class F, class... P, class... T>
auto jvp(F&& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  return forward::detail::jvp<false>("jvp", f, primals, tangents);
}
// f returns std::pair{output, aux}: std::tuple{output, tangent, aux}.
template <class F, class... P, class... T>
auto jvp(F&& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents, HasAux) {
  return forward::detail::jvp<true>("jvp", f, primals, tangents);
}

}  // namespace strata
