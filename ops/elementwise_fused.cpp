// addcmul: self + value * tensor1 * tensor2 in one pass, broadcasting all three.
// Besides being an op users call, it is what forward mode builds a product's
// tangent with (t_a b + a t_b as addcmul(t_a b, a, t_b), in ops/elementwise_binary.cpp):
// under jacfwd or hessian every tangent carries the whole basis as its batch, so
// the pass it saves is over the largest tensors of the call.
#include "dispatcher/library.h"
#include "kernels/cpu/elementwise.h"
#include "ops/elementwise_util.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using elementwise::InDtype;
using elementwise::scaled;
using AddcmulSig = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&);

constexpr const char* kName = "strata::addcmul";

Tensor addcmul_cpu(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& value) {
  const ScalarType dtype = result_type({self, a, b});
  elementwise::check_not_bool(dtype, kName);
  elementwise::check_alpha(value, dtype, kName, "value");
  const DimVector shape =
      broadcast_shapes(broadcast_shapes(self.sizes(), a.sizes(), kName), b.sizes(), kName);
  Tensor out = make_empty_tensor(shape, dtype, self.device(), kName);
  cpu::addcmul_kernel(out, InDtype(self, dtype), InDtype(a, dtype), InDtype(b, dtype), value);
  return out;
}

STRATA_LIBRARY(strata, m) {
  m.def("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) { m.impl("addcmul", &addcmul_cpu); }

// ---- derivatives: d/dself = 1, d/dtensor1 = value * tensor2, d/dtensor2 = value * tensor1.

using autograd::args;
using autograd::BackwardContext;
using autograd::ForwardContext;

void addcmul_backward(BackwardContext& c) {
  if (c.needs_grad(0)) c.set_grad(0, c.grad());
  for (size_t arg : {1, 2}) {
    if (c.needs_grad(arg)) c.set_grad(arg, scaled(c.grad() * c.input(3 - arg), c.scalar_arg(3)));
  }
}

// Each factor's term is itself fused into the running sum.
void addcmul_forward(ForwardContext& c) {
  const Scalar value = c.scalar_arg(3);
  Tensor tangent = c.has_tangent(0) ? c.tangent(0) : Tensor();
  for (size_t arg : {1, 2}) {
    if (!c.has_tangent(arg)) continue;
    const Tensor& other = c.input(3 - arg);
    tangent = tangent.defined() ? addcmul(tangent, c.tangent(arg), other, value)
                                : scaled(c.tangent(arg) * other, value);
  }
  c.set_tangent(0, std::move(tangent));
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("addcmul", autograd::derivative({.backward = &addcmul_backward,
                                          .forward = &addcmul_forward,
                                          .saved_inputs = args(1, 2)}));
}

STRATA_LIBRARY_IMPL(strata, Batched, m) { m.impl("addcmul", batching::pointwise_batch_rule()); }

}  // namespace

Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value) {
  return STRATA_OP(kName, "", AddcmulSig).call(self, tensor1, tensor2, value);
}

}  // namespace strata
