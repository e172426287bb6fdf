#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "tensor/small_vector.h"

namespace strata {
class Tensor;
class Scalar;
}  // namespace strata

namespace strata::cpu {

// Note [Elementwise loops]
// Every elementwise kernel runs through one strided driver: the output and its
// inputs are laid over the output's shape (inputs broadcast with stride 0), dims
// that are contiguous across all operands are merged, and the work is cut into
// rows of the innermost dim. A kernel only writes the row function
// (kernels/cpu/elementwise_rows.h): an op with an Eigen array expression (SIMD
// transcendental math) runs it on every element (Note [One code path per
// element]), so where the rows are cut never changes a bit; other contiguous
// rows take a loop the compiler vectorizes, rows
// with a broadcast operand hoist its value, and only the general strided row
// reads element by element.
inline constexpr int kMaxOperands = 5;  // out and up to four inputs (mul_add)

struct ElementwiseLayout {
  int num_operands = 0;
  int64_t numel = 0;
  DimVector shape;                              // after merging dims
  std::array<DimVector, kMaxOperands> strides;  // in bytes
  std::array<char*, kMaxOperands> data{};
  // Rows are computed into an L1 buffer and copied to operand 0 with streaming
  // stores (Note [Streaming large outputs]); see output_streams.
  bool stream_output = false;
};

// Whether a layout whose operand 0 is only written (never read by the row) and
// has elements of out_element_size bytes should stream it: dense rows, large.
bool output_streams(const ElementwiseLayout& layout, int64_t out_element_size);

// Operand 0 is `out`; inputs must broadcast to its shape.
ElementwiseLayout make_elementwise_layout(const Tensor& out,
                                          std::initializer_list<const Tensor*> inputs);

// fn(ctx, data, strides, n) handles n elements of one row, operand pointers in
// `data` (read only: the driver steps them between rows), byte strides in
// `strides`. Runs in parallel above kElementwiseGrain.
using RowFn = void (*)(void* ctx, char** data, const int64_t* strides, int64_t n);
void run_elementwise(const ElementwiseLayout& layout, RowFn fn, void* ctx);

// Unary kernels: `in` has out's dtype, except LogicalNot (out Bool, any input).
// Neg .. Round are numeric (Int64, Float32, Float64); Exp .. Silu floating.
enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  Sign,
  Square,
  Relu,
  Floor,
  Ceil,
  Round,  // half to even
  Exp,
  Expm1,
  Log,
  Log1p,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Gelu,
  GeluTanh,
  Silu,
  LogicalNot
};
void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in);
// out = x * beta > threshold ? x : log1p(exp(beta * x)) / beta.
void softplus_kernel(const Tensor& out, const Tensor& in, const Scalar& beta,
                     const Scalar& threshold);
// out = base ^ exponent; an Int64 base computes exactly (int_pow in kernels/int_pow.h).
void pow_scalar_kernel(const Tensor& out, const Tensor& base, const Scalar& exponent);
// out = min(max(in, min), max), a missing bound left out; NaN stays NaN.
void clamp_kernel(const Tensor& out, const Tensor& in, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max);

// Binary kernels: a and b have out's dtype. Add/Sub take alpha (out = a ± alpha*b);
// Div takes floating dtypes; Bool takes Add (or), Mul (and), Maximum, Minimum.
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Pow, Maximum, Minimum };
void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                   const Scalar& alpha);
// Comparisons and logical ops: out is Bool, a and b share any dtype.
enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr };
void compare_kernel(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b);
// out = condition ? a : b; condition is Bool, a and b have out's dtype.
void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b);

// out = self + value * a * b, in one pass; all have out's dtype (Int64 or floating).
void addcmul_kernel(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                    const Scalar& value);
// out = a * b + c * d, in one pass; all have out's dtype (Int64 or floating).
void mul_add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                    const Tensor& d);
// out = output > 0 ? grad : 0, in one pass; all have out's dtype (Int64 or floating).
void relu_backward_kernel(const Tensor& out, const Tensor& grad, const Tensor& output);

// out = a + alpha * b (binary_kernel with BinaryOp::Add).
void add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha);
// out = value, and out = src (broadcast, converting dtype).
void fill_kernel(const Tensor& out, const Scalar& value);
void copy_kernel(const Tensor& out, const Tensor& src);

}  // namespace strata::cpu
