#pragma once

// The op-table entry of a scatter op (select_scatter, slice_scatter,
// diagonal_scatter, as_strided_scatter): samples of self and a src of the region's
// shape; the reference copies self's row-major values and puts src's value at each
// position of the region, computed by index arithmetic from the sample's arguments.

#include <functional>
#include <string>
#include <vector>

#include "tests/op_table/op_info.h"
#include "tests/op_table/samples.h"
#include "tests/op_table/shape_reference.h"

namespace strata::testing {

// One sample: self of the given shape and layout, src of the region's shape.
struct ScatterCase {
  std::vector<int64_t> self_sizes;
  Layout layout;
  std::vector<int64_t> src_sizes;
  Stack args;
};

// Where element r of src goes in self (an index of self's shape).
using Position = std::function<Index(const Index&)>;
using ScatterFn = std::function<Tensor(const Tensor&, const Tensor&, const Stack&)>;
// The Position for a sample's arguments and self's sizes.
using PositionFn = std::function<Position(const Stack&, const std::vector<int64_t>&)>;

OpInfo scatter_entry(std::string name, std::vector<ScatterCase> cases, ScatterFn op,
                     PositionFn position);

}  // namespace strata::testing
