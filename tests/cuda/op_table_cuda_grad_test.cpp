// The op table's derivatives on the GPU: for every differentiable entry and
// Float64 sample, grad of sum_j <out_j, w_j> (random weights w) computed on CUDA
// copies of the inputs must equal the same gradient on the CPU, which the CPU op
// table checks against finite differences (tests/op_table/grad_test.cpp); and
// vmap(grad) of it over a batch of 3 scaled variants on the GPU must equal the
// CPU's, which the CPU table checks against a loop (vmap_test.cpp). So the GPU
// runs every derivative formula and batching rule of the backward ops. Skipped
// without a GPU, or, naming the operator, when a path reaches one with no CUDA
// kernel yet.
#include <gtest/gtest.h>

#include <string>

#include "tests/cuda/cuda_test_support.h"
#include "tests/op_table/op_info.h"
#include "tests/test_support.h"

namespace strata::testing {
namespace {

using Inputs = std::vector<Tensor>;

// One sample split into its floating inputs (differentiated) and the others.
struct SplitSample {
  Inputs floating, others;
  std::vector<bool> is_floating;

  explicit SplitSample(const Inputs& inputs) {
    for (const Tensor& t : inputs) {
      is_floating.push_back(is_floating_point(t.dtype()));
      (is_floating.back() ? floating : others).push_back(t);
    }
  }
  Inputs merge(const Inputs& f, const Inputs& o) const {
    Inputs x;
    size_t fi = 0, oi = 0;
    for (bool fl : is_floating) x.push_back(fl ? f[fi++] : o[oi++]);
    return x;
  }
};

Inputs moved_to(const Inputs& ts, Device device) {
  Inputs moved;
  for (const Tensor& t : ts) moved.push_back(to_device_keeping_layout(t, device));
  return moved;
}

bool is_missing_cuda_kernel(const Error& e) {
  return std::string(e.what()).find("no kernel for dispatch key CUDA") != std::string::npos;
}

class CudaDerivativeTest : public ::testing::Test {
 public:
  CudaDerivativeTest(const OpInfo& info, bool batched) : info_(info), batched_(batched) {}

  void TestBody() override {
    STRATA_REQUIRE_CUDA();
    const Device gpu = cuda(0);
    const Tolerance tol = info_.tolerance(batched_ ? Check::VmapGrad : Check::Grad, kFloat64);
    Generator gen(23);
    size_t checked = 0;
    for (const Sample& sample : info_.samples(kFloat64)) {
      SCOPED_TRACE(info_.name + " sample: " + sample.description);
      const SplitSample split(sample.inputs);
      if (split.floating.empty()) continue;
      const Inputs outputs = info_.op(sample.inputs, sample.args);
      if (!all_finite(outputs)) continue;  // no derivative to compare there
      Inputs weights;
      bool any_weight = false;
      for (const Tensor& out : outputs) {
        const bool floating = is_floating_point(out.dtype());
        weights.push_back(floating ? randn(out.sizes(), gen, kFloat64) : Tensor());
        any_weight |= floating;
      }
      if (!any_weight) continue;  // no floating output (unbind of an empty dim): no loss
      auto gradient = [&](const Inputs& w) {
        auto loss = [&](const Inputs& f, const Inputs& o) {
          const Inputs outs = info_.op(split.merge(f, o), sample.args);
          Tensor total;
          for (size_t j = 0; j < outs.size(); ++j) {
            if (!w[j].defined()) continue;
            const Tensor term = (outs[j].to(kFloat64) * w[j]).sum();
            total = total.defined() ? total + term : term;
          }
          return total;
        };
        return grad(loss);
      };
      auto run = [&](Device device) {
        const Inputs w = moved_to(weights, device);
        const Inputs floating = moved_to(split.floating, device);
        const Inputs others = moved_to(split.others, device);
        if (!batched_) return gradient(w)(floating, others);
        // A wrapped number stays on the CPU; its batch of variants is an
        // ordinary tensor, which goes where the others are.
        Inputs stacked;
        for (const Tensor& t : floating) {
          stacked.push_back(stack({t, t * 1.25, t * 1.5}, 0).to(device));
        }
        return vmap(gradient(w), {.in_dims = {0, none}})(stacked, others);
      };
      const Inputs expected = run(kCPU);
      // A gradient lives where its input does: a wrapped number's on the CPU.
      std::vector<Device> input_devices;
      for (const Tensor& t : moved_to(split.floating, gpu)) {
        input_devices.push_back(batched_ ? gpu : t.device());
      }
      Inputs actual;
      try {
        actual = run(gpu);
      } catch (const Error& e) {
        if (is_missing_cuda_kernel(e)) GTEST_SKIP() << "not on CUDA yet: " << e.what();
        throw;
      }
      ++checked;
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < actual.size(); ++i) {
        EXPECT_EQ(actual[i].device(), input_devices[i]) << "gradient " << i;
        EXPECT_TRUE(allclose(actual[i], expected[i], tol.atol + 1e-12, tol.rtol + 1e-12))
            << "gradient of input " << i;
      }
    }
    if (checked == 0) GTEST_SKIP() << "no sample with floating inputs and finite outputs";
  }

 private:
  const OpInfo& info_;
  bool batched_;
};

}  // namespace

void register_cuda_derivative_tests() {
  for (const OpInfo& info : op_infos()) {
    // Samples at a kink (tied values) have no derivative to compare.
    if (!info.differentiable || info.expected_failure(Check::Grad, kFloat64) != nullptr) continue;
    for (bool batched : {false, true}) {
      const std::string name = test_name(info.name);
      ::testing::RegisterTest(
          batched ? "CudaVmapGrad" : "CudaGrad", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
          [&info, batched]() -> ::testing::Test* { return new CudaDerivativeTest(info, batched); });
    }
  }
}

}  // namespace strata::testing
