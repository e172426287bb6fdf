#pragma once

#include "dispatcher/dispatcher.h"
#include "func/trace/graph.h"

// Note [Fake tensors]
// In TraceMode::Fake a tensor is a FakeTensorImpl: sizes, strides, dtype and
// device, and no storage, so reading its values (item(), to_vector(), a kernel's
// data pointer) throws strata::Error naming the reader. The recorder runs each op
// that reaches it through run_fake(): the op's shape function makes its outputs;
// an in-place op returns its argument; a primitive view op runs its own kernel on
// a stand-in whose storage has the fake tensor's storage size and no data (a view
// computes geometry only, and checks its bounds against that size), so strides,
// offsets and bounds errors are the real ones and later ops decide as they would
// on real data. A composite view op (reshape, flatten) runs its parts, since it
// may copy.

namespace strata {

Tensor make_fake(const ValueType& type);
bool is_fake(const Tensor& t);
// An alias of t's storage with t's geometry, as a different tensor.
Tensor alias_of(const Tensor& t);
// Whether run_fake() can compute op's outputs (else the op is composite and its
// parts run instead).
bool fake_runs_whole(const OperatorHandle& op);
// Replaces the op's arguments on the stack by fake results.
void run_fake(const OperatorHandle& op, Stack& stack);

}  // namespace strata
