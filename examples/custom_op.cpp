// A user's operator, registered the way Strata's own are (one OpDef row: schema,
// CPU kernel, both derivative formulas, batching rule, shape function, FLOP
// formula), checked with st::testing::opcheck, then used under vmap(grad) and
// counted by the FlopCounter.
//
//   softplus(x, beta) = log(1 + exp(beta x)) / beta
#include <strata/strata.h>

#include <cmath>
#include <iostream>

#include "dispatcher/op_def.h"
#include "func/testing/opcheck.h"
#include "ops/op_facets.h"
#include "transforms/grad/derivative.h"

namespace st = strata;

namespace {

template <class T>
void softplus_loop(const T* x, T* out, int64_t n, double beta) {
  for (int64_t i = 0; i < n; ++i) {
    const double bx = beta * static_cast<double>(x[i]);
    // log1p(exp(bx)) without overflow for large bx.
    out[i] = static_cast<T>((bx > 0 ? bx + std::log1p(std::exp(-bx)) : std::log1p(std::exp(bx))) / beta);
  }
}

st::Tensor softplus_cpu(const st::Tensor& self, double beta) {
  STRATA_CHECK(st::is_floating_point(self.dtype()), "myops::softplus", "expects a floating tensor, got ",
               st::to_string(self.dtype()));
  const st::Tensor x = self.contiguous();
  st::Tensor out = st::empty_like(x);
  if (x.dtype() == st::kFloat32) {
    softplus_loop(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), beta);
  } else {
    softplus_loop(x.data_ptr<double>(), out.data_ptr<double>(), x.numel(), beta);
  }
  return out;
}

// d/dx softplus = sigmoid(beta x), with ordinary ops so outer levels differentiate it.
void softplus_backward(st::autograd::BackwardContext& c) {
  c.set_grad(0, c.grad() * (c.input(0) * c.double_arg(1)).sigmoid());
}
void softplus_forward(st::autograd::ForwardContext& c) {
  c.set_tangent(0, c.tangent(0) * (c.input(0) * c.double_arg(1)).sigmoid());
}

const st::OpFamily kMyOps("myops",
                          {{.schema = "softplus(Tensor self, float beta=1) -> Tensor",
                            .cpu = &softplus_cpu,
                            .derivative = st::autograd::derivative({.backward = &softplus_backward,
                                                                    .forward = &softplus_forward,
                                                                    .saved_inputs = st::autograd::args(0)}),
                            .batching = st::batching::pointwise_batch_rule(),
                            .shape = &st::shape::same_as_self,
                            .flops = &st::flops::per_output_element<4>}},
                          "myops");

st::Tensor softplus(const st::Tensor& x, double beta) {
  static const auto op = st::Dispatcher::singleton()
                             .findSchemaOrThrow("myops::softplus", "")
                             .typed<st::Tensor(const st::Tensor&, double)>();
  return op.call(x, beta);
}

}  // namespace

int main() {
  const st::OperatorHandle op = st::Dispatcher::singleton().findSchemaOrThrow("myops::softplus", "");
  st::Generator gen(0);
  std::vector<st::testing::OpCheckSample> samples;
  for (double beta : {1.0, 2.5}) {
    samples.push_back({"beta " + std::to_string(beta), {st::randn({3, 4}, gen, st::kFloat64), beta}});
  }
  samples.push_back({"float32", {st::randn({5}, gen), 1.0}});
  const auto reference = [](const st::Stack& args) {
    const st::Tensor& x = args[0].to_tensor();
    const double beta = args[1].to_double();
    return std::vector<st::Tensor>{((x * beta).exp() + 1.0).log() * (1.0 / beta)};
  };
  const st::testing::OpCheckResult checked = st::testing::opcheck(op, samples, {.reference = reference});
  std::cout << "opcheck: " << (checked ? "OK" : "FAILED\n" + checked.message) << "\n";

  // Per-sample gradients through the new op, and what they cost.
  const st::Tensor xs = st::randn({8, 4}, gen, st::kFloat64);
  auto flops = std::make_shared<st::FlopCounter>();
  st::Tensor grads;
  {
    st::DispatchModeGuard guard(flops);
    grads = st::vmap(st::grad([](const st::Tensor& x) { return softplus(x, 2.0).sum(); }))(xs);
  }
  const double err = (grads - (xs * 2.0).sigmoid()).abs().max().item<double>();
  std::cout << "vmap(grad(softplus)) against sigmoid(2x): max error " << err << "\n"
            << flops->to_string();
  return checked && err < 1e-12 ? 0 : 1;
}
