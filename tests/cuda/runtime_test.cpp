// The CUDA backend's runtime: devices, copies between host and GPU, the caching
// allocator, mixed-device errors. Skipped without a GPU, except the checks of
// what a machine without one must do.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tensor/allocator.h"
#include "tests/cuda/cuda_test_support.h"

namespace strata::testing {
namespace {

std::vector<double> iota(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i % 1000) - 500.0;
  return v;
}

Tensor iota_tensor(IntArrayRef sizes, ScalarType dtype) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return tensor(iota(n), sizes).to(dtype);
}

TEST(CudaWithoutDevice, MakingATensorOnAMissingDeviceIsAClearError) {
  if (cuda_is_available()) GTEST_SKIP() << "a GPU is present: this checks a machine without one";
  try {
    zeros({2, 3}, kFloat32, cuda(0));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("cuda"), std::string::npos) << message;
    EXPECT_TRUE(message.find("no CUDA device cuda:0") != std::string::npos ||
                message.find("built without") != std::string::npos)
        << message;
  }
  EXPECT_EQ(cuda_allocator_stats().bytes_in_use, 0u);
}

TEST(CudaCopy, RoundTripKeepsValuesAcrossDtypesAndLayouts) {
  STRATA_REQUIRE_CUDA();
  const Tensor host = iota_tensor({6, 5}, kFloat64);
  const Tensor gpu = host.to(cuda(0));
  EXPECT_TRUE(gpu.device().is_cuda());
  EXPECT_EQ(gpu.to(kCPU).to_vector<double>(), host.to_vector<double>());
  // A transposed source on each side, and a conversion on the way.
  EXPECT_EQ(gpu.t().to(kCPU).to_vector<double>(), host.t().to_vector<double>());
  EXPECT_EQ(host.t().to(cuda(0)).to(kCPU).to_vector<double>(), host.t().to_vector<double>());
  const Tensor converted = empty({6, 5}, kInt64, cuda(0));
  converted.copy_(host);
  EXPECT_EQ(converted.to_vector<double>(), host.to(kInt64).to_vector<double>());
  // A broadcast source into a transposed GPU destination.
  const Tensor dst = empty({5, 6}, kFloat32, cuda(0)).t();
  dst.copy_(host.select(0, 2).unsqueeze(0));
  EXPECT_EQ(dst.to_vector<double>(),
            host.select(0, 2).unsqueeze(0).expand({6, 5}).to_vector<double>());
}

TEST(CudaCopy, LargeTransfersGoThroughTheStagingBuffersIntact) {
  STRATA_REQUIRE_CUDA();
  const int64_t n = (int64_t{20} << 20) / 4 + 3;  // 20 MiB of Float32 and an odd tail
  const Tensor host = iota_tensor({n}, kFloat32);
  const Tensor back = host.to(cuda(0)).to(kCPU);
  EXPECT_EQ(back.to_vector<double>(), host.to_vector<double>());
}

TEST(CudaCopy, PrintingCopiesToTheHost) {
  STRATA_REQUIRE_CUDA();
  std::ostringstream out;
  out << tensor({1.0, 2.0}).to(cuda(0));
  EXPECT_EQ(out.str(), "tensor([1., 2.], dtype=Float64, device=cuda:0)");
}

TEST(CudaFactories, TakeTheirDevice) {
  STRATA_REQUIRE_CUDA();
  const Tensor z = zeros({2, 3}, kFloat32, cuda(0));
  const Tensor f = full({4}, 2.5, std::nullopt, cuda(0));
  EXPECT_TRUE(z.device().is_cuda());
  EXPECT_EQ(z.to_vector<double>(), std::vector<double>(6, 0.0));
  EXPECT_EQ(f.to_vector<double>(), std::vector<double>(4, 2.5));
  EXPECT_TRUE(zeros_like(z).device().is_cuda());
  const Tensor r = arange(5, kInt64, cuda(0));
  const Tensor e = eye(2, 3, kFloat64, cuda(0));
  EXPECT_TRUE(r.device().is_cuda() && e.device().is_cuda());
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(e.to_vector<double>(), (std::vector<double>{1, 0, 0, 0, 1, 0}));
}

TEST(CudaElementwise, NumbersAndBroadcastsMixWithGpuTensors) {
  STRATA_REQUIRE_CUDA();
  const Tensor a = iota_tensor({3, 4}, kFloat32);
  const Tensor b = iota_tensor({4}, kFloat32);
  const Tensor g = (a.to(cuda(0)) * 2.0 + b.to(cuda(0))).to(kCPU);
  EXPECT_EQ(g.to_vector<double>(), (a * 2.0 + b).to_vector<double>());
  const Tensor left = (1.0 - a.to(cuda(0))).to(kCPU);
  EXPECT_EQ(left.to_vector<double>(), (1.0 - a).to_vector<double>());
}

// Broadcast layouts the strided kernel runs (Note [The CUDA elementwise
// launcher]): outer products (a per-sample weight gradient), a row broadcast,
// rows starting off a vector boundary, rows of odd length, rows a few elements
// apart, in-place writes into plain and transposed targets. The bits are the CPU's.
TEST(CudaElementwise, BroadcastLayoutsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  const Device gpu = cuda(0);
  auto same_as_cpu = [&](const Tensor& a, const Tensor& b, const char* what) {
    SCOPED_TRACE(what);
    const Tensor x = to_device_keeping_layout(a, gpu), y = to_device_keeping_layout(b, gpu);
    EXPECT_EQ((x * y).to(kCPU).to_vector<double>(), (a * b).to_vector<double>());
    EXPECT_EQ((x + y).to(kCPU).to_vector<double>(), (a + b).to_vector<double>());
  };
  same_as_cpu(iota_tensor({5, 6, 1}, kFloat32), iota_tensor({5, 1, 8}, kFloat32), "outer products");
  same_as_cpu(iota_tensor({64, 128, 1}, kFloat32) * 0.37, iota_tensor({64, 1, 784}, kFloat32),
              "per-sample weight gradients");
  same_as_cpu(iota_tensor({7, 12}, kFloat64), iota_tensor({12}, kFloat64), "a row broadcast");
  same_as_cpu(iota_tensor({4, 3, 1}, kInt64), iota_tensor({4, 1, 4}, kInt64), "Int64");
  same_as_cpu(iota_tensor({3, 5, 1}, kFloat32), iota_tensor({3, 1, 7}, kFloat32), "rows of 7");
  same_as_cpu(iota_tensor({5, 9}, kFloat32).narrow(1, 1, 8), iota_tensor({8}, kFloat32),
              "rows starting one element off");
  same_as_cpu(iota_tensor({6, 10}, kFloat32).narrow(1, 0, 8), iota_tensor({6, 1}, kFloat32),
              "rows 10 apart");

  const Tensor host = iota_tensor({6, 8}, kFloat32);
  const Tensor column = iota_tensor({6, 1}, kFloat32) * 0.5;
  const Tensor target = host.to(gpu);
  target.mul_(column.to(gpu));
  EXPECT_EQ(target.to(kCPU).to_vector<double>(), (host * column).to_vector<double>());
  const Tensor row = iota_tensor({6}, kFloat32);
  const Tensor transposed = to_device_keeping_layout(host.t(), gpu);
  transposed.add_(row.to(gpu));
  EXPECT_EQ(transposed.to(kCPU).to_vector<double>(), (host.t() + row).to_vector<double>());
}

TEST(CudaElementwise, MixedDevicesNameBothDevices) {
  STRATA_REQUIRE_CUDA();
  const Tensor host = ones({3});
  const Tensor gpu = ones({3}, std::nullopt, cuda(0));
  for (const auto& call : {+[](const Tensor&x, const Tensor&y) { return x + y; },
                           +[](const Tensor&x, const Tensor&y) { return y * x; }}) {
    try {
      call(host, gpu);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("cpu"), std::string::npos) << message;
      EXPECT_NE(message.find("cuda:0"), std::string::npos) << message;
    }
  }
  EXPECT_THROW(host.add_(gpu), Error);
}

TEST(CudaAllocator, ReusesFreedBlocksAndReleasesThem) {
  STRATA_REQUIRE_CUDA();
  ASSERT_TRUE(cuda_allocator_caching());
  { empty({1000}, kFloat32, cuda(0)); }
  const size_t before = cuda_allocator_stats().device_allocations;
  for (int i = 0; i < 10; ++i) empty({1000}, kFloat32, cuda(0));
  EXPECT_EQ(cuda_allocator_stats().device_allocations, before);
  EXPECT_GT(cuda_allocator_stats().bytes_cached, 0u);
  const size_t frees = cuda_allocator_stats().device_frees;
  release_cuda_allocator_cache();
  EXPECT_EQ(cuda_allocator_stats().bytes_cached, 0u);
  EXPECT_GT(cuda_allocator_stats().device_frees, frees);
}

TEST(CudaAllocator, WithCachingOffEveryBlockGoesBack) {
  STRATA_REQUIRE_CUDA();
  set_cuda_allocator_caching(false);
  const CudaAllocatorStats before = cuda_allocator_stats();
  { empty({1000}, kFloat32, cuda(0)); }
  const CudaAllocatorStats after = cuda_allocator_stats();
  set_cuda_allocator_caching(true);
  EXPECT_EQ(after.device_allocations, before.device_allocations + 1);
  EXPECT_EQ(after.device_frees, before.device_frees + 1);
  EXPECT_EQ(after.bytes_cached, 0u);
}

TEST(CudaAllocator, PeakCountsTheMostBytesInUseSinceItsReset) {
  STRATA_REQUIRE_CUDA();
  const size_t base = cuda_allocator_stats().bytes_in_use;
  reset_cuda_allocator_peak();
  EXPECT_EQ(cuda_allocator_stats().peak_bytes_in_use, base);
  constexpr size_t kBytes = size_t{4} << 20;  // a multiple of every block rounding
  {
    const Tensor a = empty({1 << 20}, kFloat32, cuda(0));
    const Tensor b = empty({1 << 20}, kFloat32, cuda(0));
  }
  { const Tensor c = empty({1 << 20}, kFloat32, cuda(0)); }
  const CudaAllocatorStats after = cuda_allocator_stats();
  EXPECT_EQ(after.bytes_in_use, base);
  EXPECT_GE(after.peak_bytes_in_use, base + 2 * kBytes);
  EXPECT_LT(after.peak_bytes_in_use, base + 3 * kBytes);
  reset_cuda_allocator_peak();
  EXPECT_EQ(cuda_allocator_stats().peak_bytes_in_use, base);
}

TEST(CudaAllocator, OutOfMemoryIsAClearErrorAndTheAllocatorStillWorks) {
  STRATA_REQUIRE_CUDA();
  try {
    empty({int64_t{1} << 46}, kFloat32, cuda(0));  // 256 TiB
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  const Tensor t = full({8}, 3.0, kFloat32, cuda(0));
  EXPECT_EQ(t.to_vector<double>(), std::vector<double>(8, 3.0));
}

}  // namespace
}  // namespace strata::testing
