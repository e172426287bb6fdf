// opcheck on small user operators: a correct one passes; each kind of mistake
// (a wrong derivative, no batching rule, a kernel writing an input it does not
// declare mutable, a forward that disagrees with the reference) is reported.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include "dispatcher/op_def.h"
#include "func/testing/opcheck.h"
#include "ops/op_facets.h"
#include "tensor/error.h"
#include "tests/test_support.h"
#include "transforms/grad/derivative.h"

namespace strata {
namespace {

using testing::OpCheckSample;

Tensor cube_cpu(const Tensor& self) { return self * self * self; }
// Writes its input: the schema does not say so.
Tensor sneaky_cpu(const Tensor& self) {
  Tensor out = self * self * self;
  self.contiguous().data_ptr<double>()[0] = 42.0;
  return out;
}
void cube_backward(autograd::BackwardContext& c) { c.set_grad(0, c.grad() * c.input(0).square() * 3.0); }
void cube_forward(autograd::ForwardContext& c) { c.set_tangent(0, c.tangent(0) * c.input(0).square() * 3.0); }
void wrong_backward(autograd::BackwardContext& c) { c.set_grad(0, c.grad() * c.input(0).square()); }

const autograd::Derivative kCube{.backward = &cube_backward, .forward = &cube_forward,
                                 .saved_inputs = autograd::args(0)};

const OpFamily kUserOps(
    "opcheck_test",
    {{.schema = "cube(Tensor self) -> Tensor",
      .cpu = &cube_cpu,
      .derivative = autograd::derivative(kCube),
      .batching = batching::pointwise_batch_rule(),
      .shape = &shape::same_as_self,
      .flops = &flops::per_output_element<2>},
     {.schema = "cube_wrong_grad(Tensor self) -> Tensor",
      .cpu = &cube_cpu,
      .derivative = autograd::derivative({.backward = &wrong_backward, .forward = &cube_forward,
                                          .saved_inputs = autograd::args(0)}),
      .batching = batching::pointwise_batch_rule(),
      .shape = &shape::same_as_self,
      .flops = &flops::per_output_element<2>},
     {.schema = "cube_unbatched(Tensor self) -> Tensor",
      .cpu = &cube_cpu,
      .derivative = autograd::derivative(kCube),
      .batching = Absent{"a test of opcheck's vmap check"},
      .shape = &shape::same_as_self,
      .flops = &flops::per_output_element<2>},
     {.schema = "cube_sneaky(Tensor self) -> Tensor",
      .cpu = &sneaky_cpu,
      .derivative = autograd::derivative(kCube),
      .batching = batching::pointwise_batch_rule(),
      .shape = &shape::same_as_self,
      .flops = &flops::per_output_element<2>}},
    "usertest");

OperatorHandle op(const char* name) { return Dispatcher::singleton().findSchemaOrThrow(name, ""); }

std::vector<OpCheckSample> samples() {
  return {{"vector", {tensor({0.5, -1.5, 2.0})}}, {"matrix", {tensor({1.0, 2.0, -0.5, 0.25}, {2, 2})}}};
}

std::vector<Tensor> cube_reference(const Stack& args) {
  const Tensor& x = args[0].to_tensor();
  return {x.pow(3.0)};
}

TEST(OpCheck, ACorrectOperatorPasses) {
  const auto result = testing::opcheck(op("usertest::cube"), samples(), {.reference = &cube_reference});
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(OpCheck, EachMistakeIsReported) {
  const auto wrong_grad = testing::opcheck(op("usertest::cube_wrong_grad"), samples());
  EXPECT_FALSE(wrong_grad.ok);
  testing::expect_contains(wrong_grad.message, {"usertest::cube_wrong_grad", "gradcheck"});
  EXPECT_EQ(wrong_grad.message.find("jvpcheck"), std::string::npos) << wrong_grad.message;

  const auto unbatched = testing::opcheck(op("usertest::cube_unbatched"), samples());
  EXPECT_FALSE(unbatched.ok);
  testing::expect_contains(unbatched.message, {"vmap"});
  EXPECT_TRUE(batching::loop_fallback_enabled());

  const auto sneaky = testing::opcheck(op("usertest::cube_sneaky"), samples(), {.grad = false, .jvp = false, .vmap = false});
  EXPECT_FALSE(sneaky.ok);
  testing::expect_contains(sneaky.message, {"schema", "wrote argument 'self'"});

  const auto wrong_reference = testing::opcheck(
      op("usertest::cube"), samples(),
      {.reference = [](const Stack& args) { return std::vector<Tensor>{args[0].to_tensor().square()}; }});
  EXPECT_FALSE(wrong_reference.ok);
  testing::expect_contains(wrong_reference.message, {"forward", "element"});
}

}  // namespace
}  // namespace strata
