// CUDA runtime queries. A machine without a GPU or driver has zero devices: the
// library still loads and every CPU path works.
#include <cuda_runtime.h>

#include "tensor/device.h"

namespace strata {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return count;
}

}  // namespace strata
