// The in-place variants of the unary ops (neg_, abs_, floor_, exp_, sin_, silu_, ...):
// each writes its op's values into self, bumps self's version, and differentiates
// by its op's formula (elementwise::unary_derivative), whose inputs the transforms
// keep as they were before the write. clamp_ is with clamp in
// ops/elementwise_unary.cpp.
#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_unary_internal.h"
#include "ops/elementwise_util.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "tensor/error.h"
#include "tensor/overlap.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using cpu::UnaryOp;

constexpr const char* in_place_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "strata::neg_";
    case UnaryOp::Abs: return "strata::abs_";
    case UnaryOp::Sign: return "strata::sign_";
    case UnaryOp::Square: return "strata::square_";
    case UnaryOp::Relu: return "strata::relu_";
    case UnaryOp::Floor: return "strata::floor_";
    case UnaryOp::Ceil: return "strata::ceil_";
    case UnaryOp::Round: return "strata::round_";
    case UnaryOp::Exp: return "strata::exp_";
    case UnaryOp::Expm1: return "strata::expm1_";
    case UnaryOp::Log: return "strata::log_";
    case UnaryOp::Log1p: return "strata::log1p_";
    case UnaryOp::Sqrt: return "strata::sqrt_";
    case UnaryOp::Rsqrt: return "strata::rsqrt_";
    case UnaryOp::Reciprocal: return "strata::reciprocal_";
    case UnaryOp::Sin: return "strata::sin_";
    case UnaryOp::Cos: return "strata::cos_";
    case UnaryOp::Tanh: return "strata::tanh_";
    case UnaryOp::Sigmoid: return "strata::sigmoid_";
    case UnaryOp::Silu: return "strata::silu_";
    default: return "?";
  }
}

// Whether the op computes in floating point (Int64 and Bool inputs would give
// Float32, which an integer self cannot hold), else in self's dtype (not Bool).
enum class Kind { Numeric, Floating };

// The checks the out-of-place op makes, plus that its result fits self.
template <UnaryOp kOp, Kind kKind>
void check_self(const Tensor& self) {
  const char* op = in_place_name(kOp);
  if constexpr (kKind == Kind::Numeric) {
    elementwise::check_not_bool(self.dtype(), op);
    check_no_internal_overlap(self, op);
  } else {
    elementwise::check_in_place(self, elementwise::floating_dtype(self.dtype()), self.sizes(), op);
  }
}

template <UnaryOp kOp, Kind kKind>
const Tensor& in_place_cpu(const Tensor& self) {
  check_self<kOp, kKind>(self);
  on_device::unary_kernel(kOp, self, self);
  self.impl()->bump_version();
  return self;
}

template <UnaryOp kOp, Kind kKind>
MetaList in_place_shape(OpArgs args) {
  check_self<kOp, kKind>(shape::tensor_arg(args, 0));
  return shape::same_as_self(args);
}

// One FLOP per element as the out-of-place op; under vmap each writes into its
// batched self through the boxed pointwise rule.
template <UnaryOp kOp, Kind kKind>
OpDef in_place(const char* schema) {
  return on_every_backend({.schema = schema,
                           .cpu = &in_place_cpu<kOp, kKind>,
                           .derivative = elementwise::unary_derivative(kOp),
                           .batching = batching::pointwise_batch_rule(),
                           .shape = &in_place_shape<kOp, kKind>,
                           .flops = &flops::per_output_element<1>});
}

constexpr Kind kNumeric = Kind::Numeric;
constexpr Kind kFloating = Kind::Floating;

const OpFamily kUnaryInPlaceOps("elementwise_unary_inplace", {
    in_place<UnaryOp::Neg, kNumeric>("neg_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Abs, kNumeric>("abs_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Sign, kNumeric>("sign_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Square, kNumeric>("square_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Relu, kNumeric>("relu_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Floor, kNumeric>("floor_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Ceil, kNumeric>("ceil_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Round, kNumeric>("round_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Exp, kFloating>("exp_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Expm1, kFloating>("expm1_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Log, kFloating>("log_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Log1p, kFloating>("log1p_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Sqrt, kFloating>("sqrt_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Rsqrt, kFloating>("rsqrt_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Reciprocal, kFloating>("reciprocal_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Sin, kFloating>("sin_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Cos, kFloating>("cos_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Tanh, kFloating>("tanh_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Sigmoid, kFloating>("sigmoid_(Tensor(a!) self) -> Tensor(a!)"),
    in_place<UnaryOp::Silu, kFloating>("silu_(Tensor(a!) self) -> Tensor(a!)"),
});

template <UnaryOp kOp>
const Tensor& call(const Tensor& self) {
  return STRATA_OP(in_place_name(kOp), "", const Tensor&(const Tensor&)).call(self);
}

}  // namespace

const Tensor& Tensor::neg_() const { return call<UnaryOp::Neg>(*this); }
const Tensor& Tensor::abs_() const { return call<UnaryOp::Abs>(*this); }
const Tensor& Tensor::sign_() const { return call<UnaryOp::Sign>(*this); }
const Tensor& Tensor::square_() const { return call<UnaryOp::Square>(*this); }
const Tensor& Tensor::relu_() const { return call<UnaryOp::Relu>(*this); }
const Tensor& Tensor::floor_() const { return call<UnaryOp::Floor>(*this); }
const Tensor& Tensor::ceil_() const { return call<UnaryOp::Ceil>(*this); }
const Tensor& Tensor::round_() const { return call<UnaryOp::Round>(*this); }
const Tensor& Tensor::exp_() const { return call<UnaryOp::Exp>(*this); }
const Tensor& Tensor::expm1_() const { return call<UnaryOp::Expm1>(*this); }
const Tensor& Tensor::log_() const { return call<UnaryOp::Log>(*this); }
const Tensor& Tensor::log1p_() const { return call<UnaryOp::Log1p>(*this); }
const Tensor& Tensor::sqrt_() const { return call<UnaryOp::Sqrt>(*this); }
const Tensor& Tensor::rsqrt_() const { return call<UnaryOp::Rsqrt>(*this); }
const Tensor& Tensor::reciprocal_() const { return call<UnaryOp::Reciprocal>(*this); }
const Tensor& Tensor::sin_() const { return call<UnaryOp::Sin>(*this); }
const Tensor& Tensor::cos_() const { return call<UnaryOp::Cos>(*this); }
const Tensor& Tensor::tanh_() const { return call<UnaryOp::Tanh>(*this); }
const Tensor& Tensor::sigmoid_() const { return call<UnaryOp::Sigmoid>(*this); }
const Tensor& Tensor::silu_() const { return call<UnaryOp::Silu>(*this); }

}  // namespace strata
