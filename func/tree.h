#pragma once

#include <array>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace strata {

// Note [Trees]
// Transforms take and return structured values ("trees"): a Tensor, std::vector,
// std::array, std::tuple, std::pair, std::map<std::string, T>, or a user struct
// registered by specializing TreeFields:
//
//   template <> struct strata::TreeFields<Mlp> {
//     template <class Self> static auto fields(Self& m) { return std::tie(m.w1, m.b1); }
//   };
//
// Any other leaf (a number, a bool, a string) is a constant that transforms pass
// through untouched. Leaves are always visited in the same order, so a tree can
// be flattened to its tensors and rebuilt from a list of them.
template <class T>
struct TreeFields;

namespace tree {

namespace detail {
template <class T>
struct IsSequence : std::false_type {};
template <class E, class A>
struct IsSequence<std::vector<E, A>> : std::bool_constant<!std::is_same_v<E, bool>> {};
template <class E, size_t N>
struct IsSequence<std::array<E, N>> : std::true_type {};

template <class T>
struct IsProduct : std::false_type {};
template <class... E>
struct IsProduct<std::tuple<E...>> : std::true_type {};
template <class A, class B>
struct IsProduct<std::pair<A, B>> : std::true_type {};

template <class T>
struct IsStringMap : std::false_type {};
template <class V, class C, class A>
struct IsStringMap<std::map<std::string, V, C, A>> : std::true_type {};

template <class T, class = void>
struct HasFields : std::false_type {};
template <class T>
struct HasFields<T, std::void_t<decltype(TreeFields<T>::fields(std::declval<T&>()))>>
    : std::true_type {};
}  // namespace detail

// Calls f(Tensor&) (or f(const Tensor&) for a const tree) on every tensor leaf.
template <class T, class F>
void for_each_leaf(T& t, F&& f) {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    f(t);
  } else if constexpr (detail::IsSequence<U>::value) {
    for (auto& element : t) for_each_leaf(element, f);
  } else if constexpr (detail::IsProduct<U>::value) {
    std::apply([&](auto&... element) { (for_each_leaf(element, f), ...); }, t);
  } else if constexpr (detail::IsStringMap<U>::value) {
    for (auto& entry : t) for_each_leaf(entry.second, f);
  } else if constexpr (detail::HasFields<U>::value) {
    auto fields = TreeFields<U>::fields(t);
    std::apply([&](auto&... field) { (for_each_leaf(field, f), ...); }, fields);
  }
}

// A copy of t with every tensor leaf replaced by f(leaf).
template <class T, class F>
T map(const T& t, F&& f) {
  T out = t;
  for_each_leaf(out, [&](Tensor& leaf) { leaf = f(static_cast<const Tensor&>(leaf)); });
  return out;
}

template <class T>
std::vector<Tensor> flatten(const T& t) {
  std::vector<Tensor> leaves;
  for_each_leaf(t, [&](const Tensor& leaf) { leaves.push_back(leaf); });
  return leaves;
}

// A tree shaped like `like` whose leaves are leaves[first], leaves[first + 1], ...
template <class T>
T unflatten_like(const T& like, const std::vector<Tensor>& leaves, size_t first = 0) {
  size_t next = first;
  return tree::map(like, [&](const Tensor&) { return leaves.at(next++); });
}

template <class T>
size_t num_leaves(const T& t) {
  size_t n = 0;
  for_each_leaf(t, [&](const Tensor&) { ++n; });
  return n;
}

}  // namespace tree
}  // namespace strata
