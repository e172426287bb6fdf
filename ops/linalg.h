#pragma once

// Linear algebra (ops/linalg.cpp, ops/linalg_einsum.cpp): GEMM through OpenBLAS when the
// build finds it, else Eigen (see bench/README.md).

#include <string_view>

#include "tensor/array_ref.h"
#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace strata {

Tensor mm(const Tensor& a, const Tensor& b);   // [n, k] x [k, m]
Tensor bmm(const Tensor& a, const Tensor& b);  // [b, n, k] x [b, k, m]
// NumPy semantics: 1-D operands are promoted and the added dim removed; batch dims
// broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// beta * self + alpha * (mat1 @ mat2), self broadcast to the product's shape.
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor dot(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);
// Einstein summation over explicit equations ("bi,bj->bij", "ij,bj->bi", ...).
Tensor einsum(std::string_view equation, ArrayRef<Tensor> operands);

}  // namespace strata
