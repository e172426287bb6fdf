#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

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
// rows of the innermost dim. A kernel only writes the row function; contiguous
// rows (the common case) get a plain loop the compiler vectorizes.
inline constexpr int kMaxOperands = 4;

struct ElementwiseLayout {
  int num_operands = 0;
  int64_t numel = 0;
  DimVector shape;                                 // after merging dims
  std::array<DimVector, kMaxOperands> strides;     // in bytes
  std::array<char*, kMaxOperands> data{};
};

// Operand 0 is `out`; inputs must broadcast to its shape.
ElementwiseLayout make_elementwise_layout(const Tensor& out,
                                          std::initializer_list<const Tensor*> inputs);

// fn(ctx, data, strides, n) handles n elements of one row, operand pointers in
// `data`, byte strides in `strides`. Runs in parallel above kElementwiseGrain.
using RowFn = void (*)(void* ctx, char** data, const int64_t* strides, int64_t n);
void run_elementwise(const ElementwiseLayout& layout, RowFn fn, void* ctx);

// out = a + alpha * b; out = a * b. Inputs already have out's dtype.
void add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha);
void mul_kernel(const Tensor& out, const Tensor& a, const Tensor& b);
// out = value, and out = src (broadcast, converting dtype).
void fill_kernel(const Tensor& out, const Scalar& value);
void copy_kernel(const Tensor& out, const Tensor& src);

}  // namespace strata::cpu
