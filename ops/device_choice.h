#pragma once

// Which backend's kernel an op function written once for CPU and CUDA calls (a row
// registers it as both its cpu and cuda kernel): the CUDA kernel when any of the
// op's tensors is on a GPU. That kernel checks that every tensor is on the
// output's device and names both devices otherwise, so a CPU output never
// meets GPU memory in a CPU kernel.

#include <optional>

#include "tensor/tensor.h"

namespace strata::on_device {

inline bool is_cuda(const Tensor& t) { return t.device().is_cuda(); }
inline bool is_cuda(const Tensor* t) { return t != nullptr && t->device().is_cuda(); }
inline bool is_cuda(const std::optional<Tensor>& t) { return t && t->device().is_cuda(); }
inline bool is_cuda(ArrayRef<Tensor> ts) {
  for (const Tensor& t : ts) {
    if (t.device().is_cuda()) return true;
  }
  return false;
}

template <class... Ts>
bool any_cuda(const Ts&... tensors) {
  return (is_cuda(tensors) || ...);
}

}  // namespace strata::on_device
