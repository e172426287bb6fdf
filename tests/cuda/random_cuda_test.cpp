// Random ops on the GPU draw what the CPU draws from the same seed (Note
// [Counter-based random numbers] in tensor/generator.h): uniform, integer,
// Bernoulli and dropout draws bit for bit, normal ones to the devices' libm
// rounding; and each draw moves the generator by the same count on either device.
#include <gtest/gtest.h>

#include <optional>

#include "tests/cuda/cuda_test_support.h"
#include "tests/test_support.h"

namespace strata::testing {
namespace {

using OptionalGenerator = std::optional<Generator>;
using RandomFactorySig = Tensor(IntArrayRef, const OptionalGenerator&, std::optional<ScalarType>,
                                std::optional<Device>);
using RandintSig = Tensor(int64_t, int64_t, IntArrayRef, const OptionalGenerator&,
                          std::optional<ScalarType>, std::optional<Device>);

// The factories' device option is not in the C++ API's random functions: call the op.
Tensor factory(const char* name, IntArrayRef size, const Generator& gen, ScalarType dtype,
               Device device) {
  return Dispatcher::singleton()
      .findSchemaOrThrow(name, "")
      .typed<RandomFactorySig>()
      .call(size, gen, dtype, device);
}

TEST(CudaRandom, FactoriesDrawTheCpusNumbersFromOneSeed) {
  STRATA_REQUIRE_CUDA();
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(to_string(dtype));
    Generator on_cpu(7), on_gpu(7);
    for (int draw = 0; draw < 2; ++draw) {  // the second draw starts where the first ended
      const Tensor u = factory("strata::rand", {1000}, on_gpu, dtype, cuda(0));
      EXPECT_TRUE(u.device().is_cuda());
      EXPECT_TRUE(allclose(u, factory("strata::rand", {1000}, on_cpu, dtype, kCPU), 0, 0));
      const Tensor n = factory("strata::randn", {999}, on_gpu, dtype, cuda(0));
      EXPECT_TRUE(allclose(n, factory("strata::randn", {999}, on_cpu, dtype, kCPU), 1e-6, 1e-5));
    }
  }
  auto randint_on = [](Device device, const Generator& gen) {
    return Dispatcher::singleton()
        .findSchemaOrThrow("strata::randint", "low")
        .typed<RandintSig>()
        .call(-5, 1'000'000'007, {777}, gen, kInt64, device);
  };
  EXPECT_TRUE(allclose(randint_on(cuda(0), Generator(3)), randint_on(kCPU, Generator(3)), 0, 0));
}

TEST(CudaRandom, BernoulliNormalAndDropoutDrawTheCpusNumbers) {
  STRATA_REQUIRE_CUDA();
  const Tensor p = rand({64, 1}, Generator(1), kFloat64);  // broadcast against [64, 8] below
  const Tensor probabilities = p.expand({64, 8}).contiguous();
  EXPECT_TRUE(allclose(bernoulli(probabilities.to(cuda(0)), Generator(5)),
                       bernoulli(probabilities, Generator(5)), 0, 0));
  const Tensor mean = randn({32, 4}, Generator(2), kFloat32);
  const Tensor std = rand({4}, Generator(3), kFloat32);
  EXPECT_TRUE(allclose(normal(mean.to(cuda(0)), std.to(cuda(0)), Generator(9)),
                       normal(mean, std, Generator(9)), 1e-5, 1e-5));
  const Tensor x = randn({50, 20}, Generator(4), kFloat64);
  EXPECT_TRUE(allclose(nn::dropout(x.to(cuda(0)), 0.3, true, Generator(6)),
                       nn::dropout(x, 0.3, true, Generator(6)), 0, 0));
}

TEST(CudaRandom, InvalidParametersOnTheGpuAreTheCpusErrors) {
  STRATA_REQUIRE_CUDA();
  const Tensor bad = full({3}, 1.5, kFloat32).to(cuda(0));
  const std::string message = error_message([&] { bernoulli(bad, Generator(0)); });
  EXPECT_NE(message.find("every probability must lie in [0, 1]"), std::string::npos) << message;
}

}  // namespace
}  // namespace strata::testing
