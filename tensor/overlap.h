#pragma once

#include "tensor/tensor.h"

// Memory overlap checks for ops that write into an existing tensor. An
// elementwise in-place op reads and writes each element once, so it is right
// only when every written element has its own memory and each input either is
// the written tensor itself (the same view) or shares none of its memory: other
// cases read values the op has already overwritten.

namespace strata {

// Whether two elements of t share memory (an expanded or as_strided tensor).
// Conservative for unusual as_strided layouts: true when it cannot rule it out.
bool has_internal_overlap(const Tensor& t);

// Whether the two share some memory. Exact.
bool overlaps(const Tensor& written, const Tensor& input);
// Whether `input` shares some memory with `written` without being the same
// view of it (same offset, shape, strides and dtype). Exact.
bool partially_overlaps(const Tensor& written, const Tensor& input);

namespace detail {
void check_no_internal_overlap_strided(const Tensor& written, const char* op);
void check_no_partial_overlap_shared(const Tensor& written, const Tensor& input, const char* op);
}  // namespace detail

// Raise for either case: "unsupported operation: ..." naming op and shapes. Every
// in-place op runs them, so the common cases (a contiguous target; an input of
// another storage, or the target itself) decide inline.
inline void check_no_internal_overlap(const Tensor& written, const char* op) {
  if (!written.is_contiguous()) detail::check_no_internal_overlap_strided(written, op);
}
inline void check_no_partial_overlap(const Tensor& written, const Tensor& input, const char* op) {
  if (written.impl() != input.impl() &&
      written.impl()->storage().get() == input.impl()->storage().get()) {
    detail::check_no_partial_overlap_shared(written, input, op);
  }
}
// For ops that write elements in another order than they read (scatters):
// any shared memory raises.
void check_no_overlap(const Tensor& written, const Tensor& input, const char* op);

}  // namespace strata
