// The fused elementwise kernels on CUDA (addcmul, mul_add, relu_backward), with
// the CPU kernels' contracts (kernels/cpu/elementwise.h): every tensor of out's
// dtype, Int64 or floating.
#include "kernels/cuda/dispatch.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch.cuh"
#include "tensor/scalar.h"

namespace strata::gpu {
namespace {

template <class T>
struct AddcmulF {
  T value;
  __device__ T operator()(T self, T a, T b) const { return self + value * a * b; }
};
template <class T>
struct MulAddF {
  __device__ T operator()(T a, T b, T c, T d) const { return a * b + c * d; }
};
template <class T>
struct ReluBackwardF {
  __device__ T operator()(T g, T y) const { return y > T(0) ? g : T(0); }
};

void check_dtypes(const char* op, const Tensor& out, std::initializer_list<const Tensor*> ins) {
  for (const Tensor* t : ins) {
    STRATA_CHECK(t->dtype() == out.dtype(), op, "kernel expects inputs of the output's dtype ",
                 out.dtype(), ", got ", t->dtype());
  }
}

}  // namespace

void addcmul_kernel(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                    const Scalar& value) {
  check_dtypes("strata::addcmul", out, {&self, &a, &b});
  dispatch_numeric(out.dtype(), "strata::addcmul", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T, T, T>("strata::addcmul", out, {&self, &a, &b},
                                   AddcmulF<T>{value.to<T>()});
  });
}

void mul_add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                    const Tensor& d) {
  check_dtypes("strata::mul_add", out, {&a, &b, &c, &d});
  dispatch_numeric(out.dtype(), "strata::mul_add", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T, T, T, T>("strata::mul_add", out, {&a, &b, &c, &d}, MulAddF<T>{});
  });
}

void relu_backward_kernel(const Tensor& out, const Tensor& grad, const Tensor& output) {
  check_dtypes("strata::relu_backward", out, {&grad, &output});
  dispatch_numeric(out.dtype(), "strata::relu_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T, T>("strata::relu_backward", out, {&grad, &output}, ReluBackwardF<T>{});
  });
}

}  // namespace strata::gpu
