// Dispatch table resolution (Note [Dispatch table resolution]) for each
// combination of alias registrations, fallbacks, fallthroughs and deregistration.
#include <gtest/gtest.h>

#include "tests/dispatcher/test_ops.h"

namespace strata::testing {
namespace {

constexpr char kCpu[] = "cpu";
constexpr char kImplicit[] = "implicit";
constexpr char kExplicit[] = "explicit";
constexpr char kAutogradAlias[] = "autograd-alias";
constexpr char kAutogradCpu[] = "autograd-cpu";

class DispatchTable : public ::testing::Test {
 protected:
  void SetUp() override { kernel_log().clear(); }
  // Runs test::op on a CPU tensor with `extra` keys included, returning the log.
  std::vector<std::string> run(DispatchKeySet extra = {}) {
    kernel_log().clear();
    IncludeDispatchKeyGuard guard(extra);
    call_unary("test::op", x_);
    return kernel_log();
  }
  TestLibraries libs_;
  Tensor x_ = ones({2});
};

using Log = std::vector<std::string>;

TEST_F(DispatchTable, OnlyCompositeImplicitServesBackendAndAutograd) {
  libs_.defs().def("op(Tensor x) -> Tensor", &logging_kernel<kImplicit>);
  EXPECT_EQ(run(), Log{kImplicit});
  EXPECT_EQ(run(DispatchKeySet(DispatchKey::AutogradCPU)), Log{kImplicit});
  EXPECT_EQ(run(DispatchKeySet(DispatchKey::Batched)), Log{kImplicit});
}

// The transform keys resolve alike; Functionalize's fallback, reached with no
// functionalize layer running, raises instead of running anything.
TEST_F(DispatchTable, BackendKernelBeatsCompositeImplicitAndDisablesItAboveTheBackend) {
  libs_.defs().def("op(Tensor x) -> Tensor", &logging_kernel<kImplicit>);
  libs_.at(DispatchKey::CPU).impl("op", &logging_kernel<kCpu>);
  EXPECT_EQ(run(), Log{kCpu});
  // With a real backend kernel the decomposition is not used by the transform
  // keys: the call reaches the key's fallback.
  std::string message = error_message([&] { run(DispatchKeySet(DispatchKey::Functionalize)); });
  EXPECT_NE(message.find("reached the Functionalize key"), std::string::npos) << message;
  EXPECT_TRUE(kernel_log().empty());
  // A fallthrough passes the call on to the backend kernel.
  libs_.fallback_at(DispatchKey::Functionalize).fallback(KernelFunction::fallthrough());
  EXPECT_EQ(run(DispatchKeySet(DispatchKey::Functionalize)), Log{kCpu});
}

TEST_F(DispatchTable, DirectAutogradCpuKernelBeatsAutogradAlias) {
  libs_.defs().def("op(Tensor x) -> Tensor");
  libs_.at(DispatchKey::CPU).impl("op", &logging_kernel<kCpu>);
  libs_.at(DispatchKey::Autograd).impl("op", &logging_kernel<kAutogradAlias>);
  libs_.at(DispatchKey::AutogradCPU).impl("op", &logging_kernel<kAutogradCpu>);
  EXPECT_EQ(run(DispatchKeySet(DispatchKey::AutogradCPU)), Log{kAutogradCpu});
  // AutogradCUDA has no direct kernel: the alias covers it.
  EXPECT_EQ(run(DispatchKeySet(DispatchKey::AutogradCUDA)), Log{kAutogradAlias});
  EXPECT_EQ(run(), Log{kCpu});
}

TEST_F(DispatchTable, CompositeExplicitServesBackendsAndUndefinedArgumentsRaise) {
  libs_.defs().def("op(Tensor x) -> Tensor");
  libs_.at(DispatchKey::CompositeExplicitAutograd).impl("op", &logging_kernel<kExplicit>);
  EXPECT_EQ(run(), Log{kExplicit});
  std::string message = error_message([&] { run(DispatchKeySet(DispatchKey::Functionalize)); });
  EXPECT_NE(message.find("Functionalize"), std::string::npos) << message;
  // A Tensor argument must be defined: an undefined one is an error naming it
  // before any kernel runs (an optional Tensor? may be empty).
  kernel_log().clear();
  message = error_message([&] { call_unary("test::op", Tensor()); });
  EXPECT_NE(message.find("argument 'x' (position 0) is an undefined tensor"), std::string::npos)
      << message;
  EXPECT_TRUE(kernel_log().empty());
}

TEST_F(DispatchTable, PrecedenceAtTheBackendKey) {
  libs_.defs().def("op(Tensor x) -> Tensor", &logging_kernel<kImplicit>);
  EXPECT_EQ(run(), Log{kImplicit});
  auto& explicit_lib = libs_.at(DispatchKey::CompositeExplicitAutograd);
  explicit_lib.impl("op", &logging_kernel<kExplicit>);
  EXPECT_EQ(run(), Log{kExplicit});
  libs_.at(DispatchKey::CPU).impl("op", &logging_kernel<kCpu>);
  EXPECT_EQ(run(), Log{kCpu});
}

TEST_F(DispatchTable, BackendFallbackHandlesOpsWithoutKernelsAndRedispatches) {
  libs_.defs().def("op(Tensor x) -> Tensor");
  libs_.at(DispatchKey::CPU).impl("op", &logging_kernel<kCpu>);
  libs_.fallback_at(DispatchKey::Functionalize)
      .fallback(KernelFunction::from_boxed(
          [](const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
            kernel_log().push_back("fallback:" + op.operator_name().to_string());
            op.redispatch_boxed(keys & DispatchKeySet::below(DispatchKey::Functionalize), stack);
          }));
  EXPECT_EQ(run(DispatchKeySet(DispatchKey::Functionalize)), (Log{"fallback:test::op", kCpu}));
}

TEST_F(DispatchTable, FallthroughKernelSkipsItsKeyForOneOp) {
  libs_.defs().def("op(Tensor x) -> Tensor");
  libs_.defs().def("other(Tensor x) -> Tensor");
  libs_.at(DispatchKey::CPU).impl("op", &logging_kernel<kCpu>).impl("other", &logging_kernel<kCpu>);
  libs_.fallback_at(DispatchKey::Batched)
      .fallback(KernelFunction::from_boxed([](const OperatorHandle&, DispatchKeySet, Stack&) {
        STRATA_FAIL("test", "batched fallback reached");
      }));
  libs_.at(DispatchKey::Batched).impl("op", KernelFunction::fallthrough());
  EXPECT_EQ(run(DispatchKeySet(DispatchKey::Batched)), Log{kCpu});
  IncludeDispatchKeyGuard batched(DispatchKey::Batched);
  std::string message = error_message([&] { call_unary("test::other", x_); });
  EXPECT_NE(message.find("batched fallback reached"), std::string::npos);
}

TEST_F(DispatchTable, DeregistrationRestoresThePreviousKernel) {
  libs_.defs().def("op(Tensor x) -> Tensor", &logging_kernel<kImplicit>);
  {
    Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
    cpu.impl("op", &logging_kernel<kCpu>);
    EXPECT_EQ(run(), Log{kCpu});
  }
  EXPECT_EQ(run(), Log{kImplicit});
}

TEST_F(DispatchTable, MissingKernelErrorListsRegisteredKeys) {
  libs_.defs().def("op(Tensor x) -> Tensor");
  libs_.at(DispatchKey::CUDA).impl("op", &logging_kernel<kCpu>);
  std::string message = error_message([&] { run(); });
  EXPECT_NE(message.find("[test::op] no kernel for dispatch key CPU"), std::string::npos)
      << message;
  EXPECT_NE(message.find("kernels are registered for: CUDA"), std::string::npos) << message;
}

constexpr char kFakeCudaEmpty[] = "fake-cuda-empty";

// Stands in for strata::empty's CUDA kernel: logs, and returns a CPU tensor with
// the arguments it received, so the routing is checked on a machine without a GPU.
Tensor fake_cuda_empty(IntArrayRef size, std::optional<ScalarType> dtype,
                       std::optional<Device> device) {
  kernel_log().push_back(kFakeCudaEmpty);
  EXPECT_EQ(device, std::optional<Device>(cuda(0)));
  return empty(size, dtype.value_or(kFloat32));
}

// A factory has no tensor argument to name a backend: its BackendSelect kernel
// reads the device option. With a fake kernel stacked at CUDA for this test only,
// a CUDA device option must reach it (arguments intact) and a CPU one must not.
TEST_F(DispatchTable, BackendSelectRoutesFactoriesByDevice) {
  Library cuda_kernels(Library::Kind::Impl, "strata", DispatchKey::CUDA, __FILE__, __LINE__);
  cuda_kernels.impl("empty", &fake_cuda_empty);
  kernel_log().clear();
  EXPECT_EQ(empty({2, 3}).device(), kCPU);
  EXPECT_EQ(empty({2, 3}, kFloat32, kCPU).device(), kCPU);
  EXPECT_TRUE(kernel_log().empty());
  const Tensor routed = empty({4, 5}, kFloat64, cuda(0));
  EXPECT_EQ(kernel_log(), Log{kFakeCudaEmpty});
  EXPECT_EQ(routed.sizes(), IntArrayRef({4, 5}));
  EXPECT_EQ(routed.dtype(), kFloat64);
}

}  // namespace
}  // namespace strata::testing
