#pragma once

#include <cstdint>

namespace strata {
class Tensor;
}

namespace strata::cpu {

// A contiguous tensor seen as [outer, size, inner]: `outer * inner` lanes of
// `size` elements, `inner` apart, along the dim an op works on.
struct Lanes {
  int64_t outer, size, inner;
};

// out = the running sum of `input` along each lane. Both contiguous, of out's dtype.
void cumsum_kernel(const Tensor& out, const Tensor& input, Lanes lanes);

// values and indices (Int64) of each lane of `input` sorted stably: ascending with
// NaN last, or descending with NaN first. All three contiguous; values and input of
// one dtype.
void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& input, Lanes lanes,
                 bool descending);

}  // namespace strata::cpu
