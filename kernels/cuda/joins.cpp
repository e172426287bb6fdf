// cat on CUDA (kernels/cuda/indexing.h): each input is copied into its slice of the
// output by the on-device copy, which converts dtypes and reads any layout.
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/runtime.h"
#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace strata::gpu {

void cat_kernel(const Tensor& out, ArrayRef<Tensor> inputs, int64_t dim) {
  int64_t start = 0;
  for (const Tensor& input : inputs) {
    if (input.numel() == 0) continue;
    check_same_device("strata::cat", out.device(), input.device());
    const int64_t length = input.sizes()[dim];
    DimVector sizes(out.sizes());
    sizes[dim] = length;
    const Tensor slice(
        make_intrusive<TensorImpl>(out.impl()->storage(), out.dtype(), sizes, out.strides(),
                                   out.storage_offset() + start * out.strides()[dim]));
    copy_on_device(slice, input);
    start += length;
  }
}

}  // namespace strata::gpu
