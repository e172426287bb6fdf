#pragma once

// Helpers shared by the elementwise operator files (ops/elementwise_*.cpp), and
// the gradient accumulation of the backward engine.

#include "tensor/array_ref.h"
#include "tensor/scalar.h"
#include "tensor/scalar_type.h"
#include "tensor/tensor.h"
#include "transforms/vmap/batching.h"

namespace strata::elementwise {

// t converted to `dtype` for a CPU kernel. A broadcast (stride-0) dim of t is
// converted once and stays broadcast, so an expanded input costs no more than its
// distinct elements.
Tensor converted_copy(const Tensor& t, ScalarType dtype);

// An input in the dtype a kernel computes in, for the length of one call:
//   cpu::binary_kernel(op, out, InDtype(a, dtype), InDtype(b, dtype), alpha);
// An input that already has the dtype is passed through by reference: no copy of
// the handle, so no reference-count traffic on the hot path of small ops.
class InDtype {
 public:
  InDtype(const Tensor& t, ScalarType dtype) : original_(t) {
    if (t.dtype() != dtype) converted_ = converted_copy(t, dtype);
  }
  InDtype(const InDtype&) = delete;
  InDtype& operator=(const InDtype&) = delete;
  operator const Tensor&() const { return converted_.defined() ? converted_ : original_; }

 private:
  const Tensor& original_;
  Tensor converted_;
};

// The dtype of float-only math (exp, div, ...): floating inputs keep theirs, Int64
// and Bool compute in Float32.
ScalarType floating_dtype(ScalarType dtype);

// An in-place op on self whose result has `result_dtype` and `result_shape`: the
// result must fit self's shape and cast to self's dtype without changing category
// (Float64 into Float32 is fine, Float32 into Int64 is not), and no two of
// self's elements may share memory.
void check_in_place(const Tensor& self, ScalarType result_dtype, IntArrayRef result_shape,
                    const char* op);

// A floating-point alpha (or addcmul's value: `what` names it) needs a
// floating-point result.
void check_alpha(const Scalar& alpha, ScalarType dtype, const char* op, const char* what = "alpha");

// t times factor; t itself (no op) when factor is 1, as an alpha or beta nearly
// always is.
Tensor scaled(const Tensor& t, const Scalar& factor);

// sum += grad for the backward engine (func/grad/engine.cpp), which has
// checked what add_ would: plain tensors (no transform's wrapper), the same dtype
// and shape, sum contiguous and held by no one else. On CPU, when nothing watches
// the dispatcher (dispatcher_watched()), it runs the kernel directly: through the
// dispatcher each of the many small accumulations of a backward pass cost about
// 490 instructions, most of them re-deciding what is known here.
void accumulate_plain(const Tensor& sum, const Tensor& grad);

// Arithmetic without a Bool meaning (neg, sub, pow, ...) rejects Bool inputs.
void check_not_bool(ScalarType dtype, const char* op);

// A Tensor method as a function of the tensor and the method's arguments, for
// what takes a function with the op's signature (the unboxed batching rules):
//   batching::UnaryPointwiseRule<&elementwise::AsFunction<&Tensor::sin>::call>
template <auto kMethod>
struct AsFunction;
template <class... Args, Tensor (Tensor::*kMethod)(Args...) const>
struct AsFunction<kMethod> {
  static Tensor call(const Tensor& self, Args... args) { return (self.*kMethod)(args...); }
};

// The unboxed batching rule of a binary pointwise op given by its public function,
// or by a Tensor method.
template <auto kOp>
constexpr auto kBinaryRule = &batching::BinaryPointwiseRule<kOp>::call;
template <auto kMethod>
constexpr auto kBinaryMethodRule = kBinaryRule<&AsFunction<kMethod>::call>;

}  // namespace strata::elementwise
