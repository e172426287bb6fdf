#pragma once

// Helpers for the elementwise op-table entries (entries_elementwise_*.cpp).

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/shape_inference.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/samples.h"
#include "transforms/vmap/batched_tensor.h"

namespace strata::testing {

// Shapes and layouts of three operands that broadcast together (where, addcmul).
struct TernaryCase {
  ShapeCase first, second, third;
};
inline const std::vector<TernaryCase>& ternary_cases() {
  using L = Layout;
  static const std::vector<TernaryCase> cases{
      {{{3, 4}, L::Contiguous}, {{3, 4}, L::Contiguous}, {{3, 4}, L::Contiguous}},
      {{{3, 1}, L::Contiguous}, {{1, 4}, L::Contiguous}, {{}, L::Contiguous}},
      {{{}, L::Contiguous}, {{3, 4}, L::Transposed}, {{3, 4}, L::Sliced}},
      {{{2, 3, 4}, L::Transposed}, {{4}, L::Contiguous}, {{3, 1}, L::Contiguous}},
      {{{3, 4}, L::Expanded}, {{3, 4}, L::Sliced}, {{4}, L::Contiguous}},
      {{{0, 3}, L::Contiguous}, {{3}, L::Contiguous}, {{}, L::Contiguous}},
      {{{}, L::Contiguous}, {{}, L::Contiguous}, {{}, L::Contiguous}},
  };
  return cases;
}

// A copy of t with t's strides and storage offset, in storage of its own: an
// in-place op on it sees t's layout and leaves t (which the reference reads) alone.
inline Tensor copy_keeping_layout(const Tensor& t) {
  // Inside a transform t is a wrapper without storage; grad does not track
  // in-place writes through views, so there the copy is a plain clone.
  if (!t.impl()->has_storage()) return t.clone();
  int64_t extent = t.storage_offset() + 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) return empty(t.sizes(), t.dtype(), t.device());
    extent += (t.sizes()[d] - 1) * t.strides()[d];
  }
  Tensor base = empty({extent}, t.dtype(), t.device());
  Tensor copy = strided_view(base, t.sizes(), t.strides(), t.storage_offset());
  copy.copy_(t);
  return copy;
}

// The tensor an in-place op writes `other` into: self, or, when the vmap check
// batches `other` only, self made batched like other (writing a batched value into
// an unbatched tensor is an error, one tensor cannot hold a value per sample).
inline Tensor in_place_target(const Tensor& self, const Tensor& other) {
  if (batching::as_batched(self) != nullptr || batching::as_batched(other) == nullptr) return self;
  return self + zeros_like(other, self.dtype());
}

// Samples whose first input can take the result in place: it is not expanded
// (an in-place write to a stride-0 dim is meaningless) and already has the
// broadcast shape of all inputs.
inline std::vector<Sample> in_place_samples(std::vector<Sample> samples) {
  std::erase_if(samples, [](const Sample& s) {
    const Tensor& self = s.inputs[0];
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (self.strides()[d] == 0 && self.sizes()[d] > 1) return true;
    }
    for (const Tensor& other : s.inputs) {
      if (other.dim() > self.dim()) return true;
      for (int64_t d = 0; d < other.dim(); ++d) {
        const int64_t size = other.sizes()[other.dim() - 1 - d];
        if (size != 1 && size != self.sizes()[self.dim() - 1 - d]) return true;
      }
    }
    return false;
  });
  return samples;
}

// An entry with no derivative to check: its result is Bool or integer, or
// piecewise constant (sign), so zero wherever a derivative exists.
inline OpInfo without_gradient(OpInfo info) {
  info.differentiable = false;
  info.forward_ad = false;
  info.twice_differentiable = false;
  return info;
}

// The harness picks tolerances by the entry's dtype; an Int64 or Bool entry whose
// results can be floating (float math, true division, a float operand) needs the
// Float32 tolerance there. Integer results stay far below it (small values).
inline OpInfo with_float_results_for_integer_inputs(OpInfo info) {
  for (ScalarType dtype : {kInt64, kBool}) {
    info.tolerances[{Check::Forward, dtype}] = {1e-5, 1e-5};
  }
  return info;
}

// Pairs of this dtype with every other one, as a tensor with dims, a 0-dim tensor
// (on either side) and a wrapped number of each kind: type promotion at work.
inline std::vector<Sample> mixed_dtype_samples(ScalarType dtype, double low = -2.0,
                                               double high = 2.0) {
  std::vector<Sample> samples;
  for (ScalarType other : all_dtypes()) {
    if (other == dtype) continue;
    const std::string pair = std::string(to_string(dtype)) + " with " + to_string(other);
    samples.push_back(
        {pair + " [4]",
         {make_tensor({3, 4}, dtype, low, high, 1), make_tensor({4}, other, low, high, 2)},
         {}});
    samples.push_back(
        {pair + " 0-dim",
         {make_tensor({3, 4}, dtype, low, high, 1), make_tensor({}, other, low, high, 2)},
         {}});
    samples.push_back(
        {"0-dim " + pair,
         {make_tensor({}, other, low, high, 2), make_tensor({3, 4}, dtype, low, high, 1)},
         {}});
  }
  // Wrapped numbers inside [low, high) (a Bool true is 1).
  const double mid = low + 0.625 * (high - low);
  for (const Scalar& number :
       {Scalar(true), Scalar(static_cast<int64_t>(std::ceil(mid))), Scalar(mid)}) {
    std::ostringstream name;
    name << to_string(dtype) << " with wrapped number " << number;
    samples.push_back({name.str(),
                       {make_tensor({3, 4}, dtype, Layout::Transposed, low, high, 1),
                        wrapped_scalar_tensor(number)},
                       {}});
  }
  return samples;
}

// binary_samples plus mixed_dtype_samples.
inline std::vector<Sample> binary_and_mixed_samples(ScalarType dtype, double low = -2.0,
                                                    double high = 2.0) {
  std::vector<Sample> samples = binary_samples(dtype, low, high);
  for (Sample& s : mixed_dtype_samples(dtype, low, high)) samples.push_back(std::move(s));
  return samples;
}

}  // namespace strata::testing
