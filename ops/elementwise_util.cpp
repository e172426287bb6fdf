#include "ops/elementwise_util.h"

#include "dispatcher/dispatch_mode.h"
#include "kernels/cpu/elementwise.h"
#include "ops/elementwise.h"
#include "ops/elementwise_kernels.h"
#include "tensor/error.h"
#include "tensor/overlap.h"
#include "tensor/shape_inference.h"

namespace strata::elementwise {

Tensor converted_copy(const Tensor& t, ScalarType dtype) {
  DimVector compact_sizes(t.sizes());
  bool broadcast = false;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) {
      compact_sizes[d] = 1;
      broadcast = true;
    }
  }
  if (!broadcast) {
    Tensor converted = make_empty_tensor(t.sizes(), dtype, t.device(), "strata::to");
    on_device::copy_kernel(converted, t);
    return converted;
  }
  const Tensor distinct(make_intrusive<TensorImpl>(t.impl()->storage(), t.dtype(), compact_sizes,
                                                   t.strides(), t.storage_offset()));
  Tensor converted = make_empty_tensor(compact_sizes, dtype, t.device(), "strata::to");
  on_device::copy_kernel(converted, distinct);
  DimVector strides(converted.strides());
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (compact_sizes[d] != t.sizes()[d]) strides[d] = 0;
  }
  return Tensor(
      make_intrusive<TensorImpl>(converted.impl()->storage(), dtype, t.sizes(), strides, 0));
}

ScalarType floating_dtype(ScalarType dtype) { return is_floating_point(dtype) ? dtype : kFloat32; }

namespace {
int category(ScalarType t) { return is_floating_point(t) ? 2 : t == kBool ? 0 : 1; }
}  // namespace

void check_in_place(const Tensor& self, ScalarType result_dtype, IntArrayRef result_shape,
                    const char* op) {
  STRATA_CHECK(category(result_dtype) <= category(self.dtype()), op, "result dtype ", result_dtype,
               " cannot be written in place into a ", self.dtype(), " tensor");
  STRATA_CHECK(result_shape == self.sizes(), op, "in-place output of shape ",
               shape_string(self.sizes()), " cannot hold the broadcast result of shape ",
               shape_string(result_shape));
  check_no_internal_overlap(self, op);
}

void check_alpha(const Scalar& alpha, ScalarType dtype, const char* op, const char* what) {
  STRATA_CHECK(is_floating_point(dtype) || !alpha.is_floating_point(), op, what, " ", alpha,
               " is a floating-point number but the result dtype is ", dtype);
}

void accumulate_plain(const Tensor& sum, const Tensor& grad) {
  if (sum.device().is_cpu() && grad.device().is_cpu() && !dispatcher_watched()) {
    cpu::add_kernel(sum, sum, grad, 1);
    sum.impl()->bump_version();
    return;
  }
  sum.add_(grad);
}

Tensor scaled(const Tensor& t, const Scalar& factor) {
  return factor.to_double() == 1.0 ? t : t * factor;
}

void check_not_bool(ScalarType dtype, const char* op) {
  STRATA_CHECK(dtype != kBool, op, "is not defined for Bool tensors");
}

}  // namespace strata::elementwise

namespace strata::on_device {

void throw_mixed_devices(const char* op, Device out, Device input) {
  STRATA_FAIL(op, "expected all tensors on one device, got ", out, " and ", input);
}

}  // namespace strata::on_device
