#pragma once

// Elementwise kernels from a scalar function, for ops whose math has no
// vectorised form worth writing by hand (atan2, ...): the op's family file gives
// the function and the strided driver (Note [Elementwise loops]) does the rest,
// broadcasting and threading included. Light: no Eigen.

#include <cstdint>

#include "kernels/cpu/elementwise.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"

namespace strata::cpu {

// out[i] = fn(a[i], b[i]) in out's floating dtype; a and b have out's dtype and
// broadcast to its shape. fn is called with two floats or two doubles.
template <class F>
void binary_floating_map(const Tensor& out, const Tensor& a, const Tensor& b, const char* op,
                         F fn) {
  const ElementwiseLayout layout = make_elementwise_layout(out, {&a, &b});
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), op, [&] {
    const RowFn row = [](void* ctx, char** data, const int64_t* strides, int64_t n) {
      const F& f = *static_cast<const F*>(ctx);
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<scalar_t*>(data[0] + i * strides[0]) =
            f(*reinterpret_cast<const scalar_t*>(data[1] + i * strides[1]),
              *reinterpret_cast<const scalar_t*>(data[2] + i * strides[2]));
      }
    };
    run_elementwise(layout, row, &fn);
  });
}

}  // namespace strata::cpu
