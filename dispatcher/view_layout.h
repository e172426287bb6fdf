#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "tensor/small_vector.h"
#include "tensor/tensor.h"

namespace strata {

// Note [View layouts]
// A view made by selecting or slicing is a new layout over its argument's
// memory, computed from the argument's layout and the op's int arguments
// alone. Such an op's row gives that computation as its view_layout facet (and
// its kernel is that computation applied to self's layout): a caller that holds
// a layout but must not, or need not, dispatch a call to get the view's (a
// functionalize level making the view of a value below it) calls the facet.

// The layout of a strided tensor: sizes, strides and offset, in elements.
struct ViewLayout {
  DimVector sizes;
  DimVector strides;
  int64_t offset = 0;

  static ViewLayout of(const Tensor& t) {
    return {DimVector(t.sizes()), DimVector(t.strides()), t.storage_offset()};
  }
};

// The int arguments (int or int?) after self of a view op, unboxed. Filled
// field by field and then copied whole: filled well before the copy (before
// the call that makes the view, not after), the copy need not wait for the
// stores to reach the cache.
struct ViewIntArgs {
  std::array<int64_t, 4> values{};
  uint8_t size = 0;
  uint8_t none = 0;  // bit i: argument i is None

  void add(int64_t v) { values[size++] = v; }
  void add(std::optional<int64_t> v) {
    if (!v) none = static_cast<uint8_t>(none | (1u << size));
    values[size++] = v.value_or(0);
  }
  bool is_none(uint8_t i) const { return ((none >> i) & 1u) != 0; }
  // Argument i as the C++ type T (int64_t or std::optional<int64_t>).
  template <class T>
  T get(uint8_t i) const {
    if constexpr (std::is_same_v<T, int64_t>) {
      return values[i];
    } else {
      return is_none(i) ? T() : T(values[i]);
    }
  }
};

// A view op's layout from its argument's (Note [View layouts]): `layout` is
// self's on entry and the view's on return; throws the op's own errors.
using ViewLayoutFn = void (*)(ViewLayout& layout, const ViewIntArgs& args);

}  // namespace strata
