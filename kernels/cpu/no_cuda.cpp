// Built instead of kernels/cuda/ when Strata is configured without CUDA.
#include "tensor/device.h"

namespace strata {

int cuda_device_count() { return 0; }

}  // namespace strata
