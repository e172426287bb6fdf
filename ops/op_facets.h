#pragma once

// Facets many rows share (Note [One op, one place], dispatcher/op_def.h): shape
// functions and FLOP formulas of pointwise, metadata-only and factory ops, and the
// helpers the family files build their own from.

#include "dispatcher/op_def.h"
#include "tensor/tensor.h"

namespace strata::shape {

// Argument i as the op sees it.
const Tensor& tensor_arg(OpArgs args, size_t i);
// One output.
MetaList single(IntArrayRef sizes, ScalarType dtype);

// Pointwise ops: the broadcast shape of every Tensor argument, in their promoted
// dtype (result_type) ...
MetaList pointwise(OpArgs args);
// ... in the floating dtype of float-only math (Int64 and Bool compute in Float32) ...
MetaList pointwise_floating(OpArgs args);
// ... or Bool (comparisons, logical ops).
MetaList pointwise_bool(OpArgs args);
// Argument 0's sizes and dtype (in-place ops, ops that keep their input's shape).
MetaList same_as_self(OpArgs args);

}  // namespace strata::shape

namespace strata::flops {

// kPerElement floating-point operations per element of output 0.
template <int64_t kPerElement>
int64_t per_output_element(OpArgs, const MetaList& outputs) {
  int64_t n = 1;
  for (int64_t d : outputs.at(0).sizes) n *= d;
  return kPerElement * n;
}

// Zero by definition: the op moves, views, compares or creates values without
// arithmetic on them.
int64_t zero(OpArgs args, const MetaList& outputs);

}  // namespace strata::flops

namespace strata {

// A row whose cpu kernel serves every backend (it allocates on its inputs' device
// and calls the kernel of that device, as ops/elementwise_kernels.h's do): the
// same function registered at CPU and CUDA.
inline OpDef on_every_backend(OpDef row) {
  row.cuda = row.cpu;
  return row;
}

}  // namespace strata
