// fill and the on-device part of copy (dtype conversion, broadcast, strides).
#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch.cuh"
#include "tensor/scalar.h"

namespace strata::gpu {
namespace {

template <class T>
struct FillF {
  T value;
  __device__ T operator()() const { return value; }
};

template <class Out, class Src>
struct ConvertF {
  __device__ Out operator()(Src x) const { return static_cast<Out>(x); }
};

}  // namespace

void fill_kernel(const Tensor& out, const Scalar& value) {
  dispatch_all(out.dtype(), "strata::fill_", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T>("strata::fill_", out, {}, FillF<T>{value.to<T>()});
  });
}

void copy_on_device(const Tensor& out, const Tensor& src) {
  dispatch_all(out.dtype(), "strata::copy_", [&](auto out_tag) {
    using Out = decltype(out_tag);
    dispatch_all(src.dtype(), "strata::copy_", [&](auto src_tag) {
      using Src = decltype(src_tag);
      launch_elementwise<Out, Src>("strata::copy_", out, {&src}, ConvertF<Out, Src>{});
    });
  });
}

}  // namespace strata::gpu
