// Fused pointwise ops, one pass over their broadcast operands:
//   addcmul: self + value * tensor1 * tensor2;
//   mul_add: a * b + c * d;
//   relu_backward: grad where output > 0, else 0.
// addcmul is an op users call; mul_add and relu_backward are what derivative
// formulas are written with (ops/elementwise_backward.h): a product's tangent
// t_a b + a t_b is mul_add(t_a, b, a, t_b) (in ops/elementwise_binary.cpp). Under
// jacfwd or hessian every tangent carries the whole basis as its batch, so each
// pass saved is over the largest tensors of the call: the fused tangent reads t_a
// and t_b and writes the result, where a mul and an addcmul also wrote and read
// back the intermediate t_a b.
#include <utility>
#include <vector>

#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_backward.h"
#include "ops/elementwise_util.h"
#include "ops/op_facets.h"
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
using MulAddSig = Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&);
using ReluBackwardSig = Tensor(const Tensor&, const Tensor&);

constexpr char kAddcmul[] = "strata::addcmul";
constexpr char kMulAdd[] = "strata::mul_add";
constexpr char kReluBackward[] = "strata::relu_backward";

// The dtype a fused op computes in and returns (the inputs' promoted one, not
// Bool), and the shape of all inputs broadcast together: the kernels' output and
// the shape functions' answer.
TensorMeta fused_meta(ArrayRef<Tensor> inputs, const char* name) {
  const ScalarType dtype = result_type(inputs);
  elementwise::check_not_bool(dtype, name);
  DimVector shape(inputs[0].sizes());
  for (size_t i = 1; i < inputs.size(); ++i)
    shape = broadcast_shapes(shape, inputs[i].sizes(), name);
  return {std::move(shape), dtype};
}

// addcmul's value also has to fit the dtype, like an alpha.
TensorMeta addcmul_meta(ArrayRef<Tensor> inputs, const Scalar& value) {
  TensorMeta meta = fused_meta(inputs, kAddcmul);
  elementwise::check_alpha(value, meta.dtype, kAddcmul, "value");
  return meta;
}

Tensor new_output(const TensorMeta& meta, const Tensor& first, const char* name) {
  return make_empty_tensor(meta.sizes, meta.dtype, first.device(), name);
}

Tensor addcmul_cpu(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& value) {
  const TensorMeta meta = addcmul_meta({self, a, b}, value);
  const ScalarType dtype = meta.dtype;
  Tensor out = new_output(meta, self, kAddcmul);
  on_device::addcmul_kernel(out, InDtype(self, dtype), InDtype(a, dtype), InDtype(b, dtype), value);
  return out;
}

Tensor mul_add_cpu(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d) {
  const TensorMeta meta = fused_meta({a, b, c, d}, kMulAdd);
  const ScalarType dtype = meta.dtype;
  Tensor out = new_output(meta, a, kMulAdd);
  on_device::mul_add_kernel(out, InDtype(a, dtype), InDtype(b, dtype), InDtype(c, dtype),
                            InDtype(d, dtype));
  return out;
}

// Note [relu's gradient as one op]
// relu's gradient written as grad * (output > 0) is a Bool mask, its conversion to
// grad's dtype and a product: three passes over the gradient where this op takes
// one.
Tensor relu_backward_cpu(const Tensor& grad, const Tensor& output) {
  const TensorMeta meta = fused_meta({grad, output}, kReluBackward);
  const ScalarType dtype = meta.dtype;
  Tensor out = new_output(meta, grad, kReluBackward);
  on_device::relu_backward_kernel(out, InDtype(grad, dtype), InDtype(output, dtype));
  return out;
}

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

// ---- mul_add: each factor's gradient is the gradient times its partner (the
// other factor of its product: argument arg ^ 1).
//
// Note [Repeated products]
// x * x differentiates to g x + g x (ops/elementwise_binary.cpp): a mul_add whose
// second product repeats its first. Its derivatives treat it as 2 a b: one
// gradient per factor, and under forward mode the tangent t_a 2b + 2a t_b in one
// pass, where 2b and 2a are on the primals (under hessian those are vectors, the
// tangents [n, n]).

bool repeats_its_product(const BackwardContext& c) {
  return c.same_tensor(0, 2) && c.same_tensor(1, 3);
}

void mul_add_backward(BackwardContext& c) {
  if (repeats_its_product(c)) {
    const Tensor twice = scaled(c.grad(), 2.0);
    for (size_t arg : {0, 1}) {
      if (c.needs_grad(arg)) c.set_grad(arg, twice * c.input(arg ^ 1));
    }
    return;
  }
  for (size_t arg : {0, 1, 2, 3}) {
    if (c.needs_grad(arg)) c.set_grad(arg, c.grad() * c.input(arg ^ 1));
  }
}

bool repeats_its_product(const ForwardContext& c) {
  auto same = [&](size_t a, size_t b) {
    return c.input(a).impl() == c.input(b).impl() && c.tangent(a).impl() == c.tangent(b).impl();
  };
  return c.has_tangent(0) && c.has_tangent(1) && same(0, 2) && same(1, 3);
}

// The tangent t_a b + a t_b + t_c d + c t_d over the factors that have a
// tangent, two terms per mul_add.
void mul_add_forward(ForwardContext& c) {
  if (repeats_its_product(c)) {
    return c.set_tangent(
        0, mul_add(c.tangent(0), scaled(c.input(1), 2.0), scaled(c.input(0), 2.0), c.tangent(1)));
  }
  SmallVector<size_t, 4> factors;
  for (size_t arg : {0, 1, 2, 3}) {
    if (c.has_tangent(arg)) factors.push_back(arg);
  }
  Tensor tangent;
  for (size_t i = 0; i < factors.size(); i += 2) {
    const size_t f = factors[i];
    Tensor terms = i + 1 < factors.size()
                       ? mul_add(c.tangent(f), c.input(f ^ 1), c.tangent(factors[i + 1]),
                                 c.input(factors[i + 1] ^ 1))
                       : c.tangent(f) * c.input(f ^ 1);
    tangent = autograd::sum_defined(std::move(terms), tangent);
  }
  c.set_tangent(0, std::move(tangent));
}

// ---- relu_backward is linear in grad and flat in output (away from 0, where relu
// has no derivative): it differentiates into itself.

void relu_backward_backward(BackwardContext& c) {
  if (c.needs_grad(0)) c.set_grad(0, relu_backward(c.grad(), c.input(1)));
}

void relu_backward_forward(ForwardContext& c) {
  if (c.has_tangent(0)) c.set_tangent(0, relu_backward(c.tangent(0), c.input(1)));
}

// ---- the rows (Note [One op, one place]); every op here is pointwise in all its
// tensors, batched by the boxed pointwise rule.

// The first kInputs arguments, the op's tensors.
template <size_t kInputs>
std::vector<Tensor> tensor_args(OpArgs args) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < kInputs; ++i) inputs.push_back(shape::tensor_arg(args, i));
  return inputs;
}

MetaList addcmul_shape(OpArgs args) {
  return {addcmul_meta(tensor_args<3>(args), args[3].to_scalar())};
}

template <const char* kName, size_t kInputs>
MetaList fused_shape(OpArgs args) {
  return {fused_meta(tensor_args<kInputs>(args), kName)};
}

const OpFamily kFusedOps("elementwise_fused", {
    // A multiply-add and a product per element; value scales the product, counted
    // once with it.
    {.schema = "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
     .cpu = &addcmul_cpu,
     .cuda = &addcmul_cpu,
     .derivative = autograd::derivative({.backward = &addcmul_backward,
                                         .forward = &addcmul_forward,
                                         .saved_inputs = args(1, 2)}),
     .batching = batching::pointwise_batch_rule(),
     .shape = &addcmul_shape,
     .flops = &flops::per_output_element<3>},
    // A product and a multiply-add per element.
    {.schema = "mul_add(Tensor a, Tensor b, Tensor c, Tensor d) -> Tensor",
     .cpu = &mul_add_cpu,
     .cuda = &mul_add_cpu,
     .derivative = autograd::derivative({.backward = &mul_add_backward,
                                         .forward = &mul_add_forward,
                                         .saved_inputs = args(0, 1, 2, 3)}),
     .batching = batching::pointwise_batch_rule(),
     .shape = &fused_shape<kMulAdd, 4>,
     .flops = &flops::per_output_element<3>},
    // One comparison and select per element.
    {.schema = "relu_backward(Tensor grad, Tensor output) -> Tensor",
     .cpu = &relu_backward_cpu,
     .cuda = &relu_backward_cpu,
     .derivative = autograd::derivative({.backward = &relu_backward_backward,
                                         .forward = &relu_backward_forward,
                                         .saved_inputs = args(1)}),
     .batching = batching::pointwise_batch_rule(),
     .shape = &fused_shape<kReluBackward, 2>,
     .flops = &flops::per_output_element<1>},
});

}  // namespace

Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value) {
  return STRATA_OP(kAddcmul, "", AddcmulSig).call(self, tensor1, tensor2, value);
}

Tensor mul_add(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d) {
  return STRATA_OP(kMulAdd, "", MulAddSig).call(a, b, c, d);
}

Tensor relu_backward(const Tensor& grad, const Tensor& output) {
  return STRATA_OP(kReluBackward, "", ReluBackwardSig).call(grad, output);
}

}  // namespace strata
