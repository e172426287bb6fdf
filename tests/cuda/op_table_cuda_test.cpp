// The op table on the GPU: for every entry, dtype and sample, the op on CUDA
// copies of the inputs (same layout) must equal the op on the CPU inputs, within
// the entry's forward tolerance (at least 1e-5 relative and absolute in Float32:
// the two backends' libm differ by a few ulps). One test per (op, dtype);
// skipped, with the reason, when there is no GPU or when the op's path reaches an
// operator with no CUDA kernel yet (the reason names it), so the skips list what
// the backend still lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tests/cuda/cuda_test_support.h"
#include "tests/op_table/op_info.h"

namespace strata::testing {
namespace {

::testing::AssertionResult same_values(const Tensor& gpu, const Tensor& cpu, Tolerance tol) {
  if (!gpu.device().is_cuda()) {
    return ::testing::AssertionFailure() << "output is on " << gpu.device() << ", not the GPU";
  }
  if (gpu.sizes() != cpu.sizes() || gpu.dtype() != cpu.dtype()) {
    return ::testing::AssertionFailure()
           << "GPU " << shape_string(gpu.sizes()) << " " << gpu.dtype() << ", CPU "
           << shape_string(cpu.sizes()) << " " << cpu.dtype();
  }
  const std::vector<double> a = gpu.to_vector<double>();
  const std::vector<double> e = cpu.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (std::isinf(a[i]) && a[i] == e[i]) continue;
    if (!(std::abs(a[i] - e[i]) <= tol.atol + tol.rtol * std::abs(e[i]))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": GPU " << a[i] << ", CPU " << e[i] << " (atol " << tol.atol
             << ", rtol " << tol.rtol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

Tolerance gpu_tolerance(const OpInfo& info, ScalarType dtype) {
  Tolerance tol = info.tolerance(Check::Forward, dtype);
  if (dtype == kFloat32) {
    tol.atol = std::max(tol.atol, 1e-5);
    tol.rtol = std::max(tol.rtol, 1e-5);
  }
  return tol;
}

bool is_missing_cuda_kernel(const Error& e) {
  return std::string(e.what()).find("no kernel for dispatch key CUDA") != std::string::npos;
}

class CudaForwardTest : public ::testing::Test {
 public:
  CudaForwardTest(const OpInfo& info, ScalarType dtype) : info_(info), dtype_(dtype) {}

  void TestBody() override {
    STRATA_REQUIRE_CUDA();
    const Device gpu = cuda(0);
    const Tolerance tol = gpu_tolerance(info_, dtype_);
    for (const Sample& sample : info_.samples(dtype_)) {
      SCOPED_TRACE(info_.name + " " + to_string(dtype_) + " sample: " + sample.description);
      std::vector<Tensor> inputs;
      for (const Tensor& t : sample.inputs) inputs.push_back(to_device_keeping_layout(t, gpu));
      Stack args;
      for (const IValue& v : sample.args) {
        args.push_back(v.is_tensor() ? IValue(to_device_keeping_layout(v.to_tensor(), gpu)) : v);
      }
      const std::vector<Tensor> expected = info_.op(sample.inputs, sample.args);
      std::vector<Tensor> actual;
      try {
        actual = info_.op(inputs, args);
      } catch (const Error& e) {
        if (is_missing_cuda_kernel(e)) GTEST_SKIP() << "not on CUDA yet: " << e.what();
        throw;
      }
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t k = 0; k < actual.size(); ++k) {
        EXPECT_TRUE(same_values(actual[k], expected[k], tol)) << "output " << k;
      }
    }
  }

 private:
  const OpInfo& info_;
  ScalarType dtype_;
};

}  // namespace

void register_cuda_forward_tests() {
  for (const OpInfo& info : op_infos()) {
    for (ScalarType dtype : info.dtypes) {
      // A factory makes CPU tensors unless given a device: nothing of it runs on
      // the GPU here (CudaFactories checks the device overloads).
      if (info.factory) continue;
      const std::string name = test_name(info.name + "." + to_string(dtype));
      ::testing::RegisterTest(
          "CudaForward", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
          [&info, dtype]() -> ::testing::Test* { return new CudaForwardTest(info, dtype); });
    }
  }
}

}  // namespace strata::testing
