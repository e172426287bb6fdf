#pragma once

#include <string>

#include "func/tree.h"

// Comparing the shapes of two trees of the same C++ type (Note [Trees]): a
// transform that calls a function several times (vmap's chunks, jacfwd's) and
// joins the results leaf by leaf needs every call to return the same structure.

namespace strata::tree {
namespace detail {

template <class T>
std::string first_difference(const T& a, const T& b, const std::string& path);

template <class Seq>
std::string first_sequence_difference(const Seq& a, const Seq& b, const std::string& path) {
  if (a.size() != b.size()) {
    return path + ": " + std::to_string(a.size()) + " elements vs " + std::to_string(b.size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    std::string d = first_difference(a[i], b[i], path + "[" + std::to_string(i) + "]");
    if (!d.empty()) return d;
  }
  return {};
}

template <class Map>
std::string key_list(const Map& m) {
  std::string keys;
  for (const auto& entry : m) keys += (keys.empty() ? "\"" : ", \"") + entry.first + "\"";
  return "{" + keys + "}";
}

template <class T>
std::string first_difference(const T& a, const T& b, const std::string& path) {
  if constexpr (IsSequence<T>::value) {
    return first_sequence_difference(a, b, path);
  } else if constexpr (IsProduct<T>::value) {
    std::string d;
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((d.empty() ? void(d = first_difference(std::get<I>(a), std::get<I>(b),
                                              path + "<" + std::to_string(I) + ">"))
                  : void()),
       ...);
    }
    (std::make_index_sequence<std::tuple_size_v<T>>());
    return d;
  } else if constexpr (IsStringMap<T>::value) {
    bool same_keys = a.size() == b.size();
    for (auto ia = a.begin(), ib = b.begin(); same_keys && ia != a.end(); ++ia, ++ib) {
      same_keys = ia->first == ib->first;
    }
    if (!same_keys) return path + ": keys " + key_list(a) + " vs " + key_list(b);
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      std::string d = first_difference(ia->second, ib->second, path + "[\"" + ia->first + "\"]");
      if (!d.empty()) return d;
    }
    return {};
  } else if constexpr (HasFields<T>::value) {
    auto fa = TreeFields<T>::fields(const_cast<T&>(a));
    auto fb = TreeFields<T>::fields(const_cast<T&>(b));
    std::string d;
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((d.empty() ? void(d = first_difference(std::get<I>(fa), std::get<I>(fb),
                                              path + ".field" + std::to_string(I)))
                  : void()),
       ...);
    }
    (std::make_index_sequence<std::tuple_size_v<decltype(fa)>>());
    return d;
  } else {
    return {};  // a tensor or a constant leaf: one leaf either way
  }
}

// Finds the path of the leaf `remaining` leaves further on; true once found.
template <class T>
bool find_leaf(const T& t, size_t& remaining, const std::string& path, std::string& out) {
  if constexpr (std::is_same_v<T, Tensor>) {
    if (remaining-- > 0) return false;
    out = path;
    return true;
  } else if constexpr (IsSequence<T>::value) {
    for (size_t i = 0; i < t.size(); ++i) {
      if (find_leaf(t[i], remaining, path + "[" + std::to_string(i) + "]", out)) return true;
    }
    return false;
  } else if constexpr (IsProduct<T>::value) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return (find_leaf(std::get<I>(t), remaining, path + "<" + std::to_string(I) + ">", out) ||
              ...);
    }
    (std::make_index_sequence<std::tuple_size_v<T>>());
  } else if constexpr (IsStringMap<T>::value) {
    for (const auto& entry : t) {
      if (find_leaf(entry.second, remaining, path + "[\"" + entry.first + "\"]", out)) return true;
    }
    return false;
  } else if constexpr (HasFields<T>::value) {
    auto fields = TreeFields<T>::fields(const_cast<T&>(t));
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return (find_leaf(std::get<I>(fields), remaining, path + ".field" + std::to_string(I), out) ||
              ...);
    }
    (std::make_index_sequence<std::tuple_size_v<decltype(fields)>>());
  } else {
    return false;
  }
}

}  // namespace detail

// Where leaf number `leaf` (in for_each_leaf order) sits in t, e.g. `["w"]` or
// `[2]<0>`; empty for a tensor argument itself.
template <class T>
std::string leaf_path(const T& t, size_t leaf) {
  std::string out;
  size_t remaining = leaf;
  detail::find_leaf(t, remaining, "", out);
  return out;
}

// Empty when a and b have the same structure (the same leaves in the same
// places); otherwise where they first differ, e.g. `result<1>: 3 elements vs 2`
// or `result["w"]: keys {"a", "b"} vs {"a", "c"}`.
template <class T>
std::string structure_difference(const T& a, const T& b) {
  return detail::first_difference(a, b, "result");
}

}  // namespace strata::tree
