#include "ops/nn_common.h"

#include "kernels/cpu/elementwise.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"

namespace strata::nn_detail {

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor copy = make_empty_tensor(t.sizes(), t.dtype(), t.device(), "strata::contiguous");
  cpu::copy_kernel(copy, t);
  return copy;
}

std::optional<Tensor> contiguous(const std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return contiguous(*t);
}

std::array<int64_t, 2> expand_pair(IntArrayRef values, const char* op, const char* what) {
  STRATA_CHECK(values.size() == 1 || values.size() == 2, op, what,
               " takes 1 or 2 values (height, width), got ", values.size(), ": ",
               shape_string(values));
  return {values[0], values[values.size() - 1]};
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  STRATA_CHECK(t.dtype() == kFloat32 || t.dtype() == kFloat64, op, what,
               " must be Float32 or Float64, got ", t.dtype());
}

void check_same_dtype(const Tensor& t, ScalarType expected, const char* op, const char* what) {
  STRATA_CHECK(t.dtype() == expected, op, what, " has dtype ", t.dtype(), " but the input has ",
               expected);
}

}  // namespace strata::nn_detail
