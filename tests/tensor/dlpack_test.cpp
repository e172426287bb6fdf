// DLPack exchange: zero-copy both ways, strides and owners kept, bad input refused.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <vector>

#include "tests/test_support.h"

namespace strata {
namespace {

using testing::error_message;
using testing::expect_contains;

TEST(DLPack, ExportDescribesTheTensorWithoutCopying) {
  const Tensor t = arange(6).to(kFloat64).reshape({2, 3}).t();  // strides {1, 3}
  DLManagedTensor* m = to_dlpack(t);
  const DLTensor& dl = m->dl_tensor;
  EXPECT_EQ(dl.data, t.data_ptr());
  EXPECT_EQ(dl.ndim, 2);
  EXPECT_EQ(dl.shape[0], 3);
  EXPECT_EQ(dl.shape[1], 2);
  EXPECT_EQ(dl.strides[0], 1);
  EXPECT_EQ(dl.strides[1], 3);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 64);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  m->deleter(m);
}

TEST(DLPack, RoundTripSharesMemoryKeepsStridesAndTheOwner) {
  for (ScalarType dtype : {kFloat32, kFloat64, kInt64}) {
    Tensor t = arange(12).to(dtype).reshape({3, 4}).t();
    const std::vector<double> values = t.to_vector<double>();
    void* data = t.data_ptr();
    Tensor back = from_dlpack(to_dlpack(t));
    EXPECT_EQ(back.data_ptr(), data);
    EXPECT_EQ(back.sizes(), t.sizes());
    EXPECT_EQ(back.strides(), t.strides());
    EXPECT_EQ(back.dtype(), dtype);
    t = Tensor();  // the exported tensor keeps the memory alive
    EXPECT_EQ(back.to_vector<double>(), values);
    // Writes are seen on both sides: one buffer.
    Tensor again = from_dlpack(to_dlpack(back));
    again.fill_(7);
    EXPECT_EQ(back.to_vector<double>(), std::vector<double>(12, 7.0));
  }
  const Tensor mask = tensor(std::vector<double>{1, 0, 2}) > 0.5;
  EXPECT_EQ(from_dlpack(to_dlpack(mask)).to_vector<double>(), (std::vector<double>{1, 0, 1}));
}

// A DLManagedTensor made by "another library": its deleter records the call.
struct Foreign {
  std::vector<float> buffer{1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  int deleted = 0;
  DLManagedTensor managed{};
  Foreign() {
    managed.dl_tensor = {buffer.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* m) { ++static_cast<Foreign*>(m->manager_ctx)->deleted; };
  }
};

TEST(DLPack, ImportOwnsTheCapsuleUntilTheLastTensorDies) {
  Foreign foreign;
  {
    Tensor t = from_dlpack(&foreign.managed);
    EXPECT_EQ(t.data_ptr(), foreign.buffer.data());
    EXPECT_EQ(t.strides(), IntArrayRef({3, 1}));  // null strides: row-major
    const Tensor view = t.select(0, 1);
    t = Tensor();
    EXPECT_EQ(foreign.deleted, 0);
    EXPECT_EQ(view.to_vector<double>(), (std::vector<double>{4, 5, 6}));
  }
  EXPECT_EQ(foreign.deleted, 1);
}

TEST(DLPack, BadInputIsAClearError) {
  Foreign foreign;
  Tensor owner = from_dlpack(&foreign.managed);
  expect_contains(error_message([&] { from_dlpack(&foreign.managed); }),
                  {"from_dlpack", "already consumed"});
  owner = Tensor();
  EXPECT_EQ(foreign.deleted, 1);

  Foreign half;
  half.managed.dl_tensor.dtype = {kDLFloat, 16, 1};
  expect_contains(error_message([&] { from_dlpack(&half.managed); }),
                  {"from_dlpack", "unsupported dtype", "16 bits"});
  Foreign vulkan;
  vulkan.managed.dl_tensor.device = {kDLVulkan, 1};
  expect_contains(error_message([&] { from_dlpack(&vulkan.managed); }),
                  {"from_dlpack", "unsupported device", "id 1", "CPU and CUDA"});
  Foreign missing_gpu;  // no process has 64 GPUs
  missing_gpu.managed.dl_tensor.device = {kDLCUDA, 64};
  expect_contains(error_message([&] { from_dlpack(&missing_gpu.managed); }),
                  {"from_dlpack", "CUDA device 64", "this process sees"});
  // Refused capsules still belong to the caller.
  EXPECT_EQ(half.deleted + vulkan.deleted + missing_gpu.deleted, 0);
  expect_contains(error_message([] { from_dlpack(nullptr); }), {"null"});
  expect_contains(error_message([] { to_dlpack(Tensor()); }), {"undefined"});
}

TEST(DLPack, TensorsInsideTransformsAreRefused) {
  const Tensor x = tensor({1.0, 2.0});
  expect_contains(error_message([&] {
                    grad([](const Tensor& v) {
                      to_dlpack(v);
                      return v.sum();
                    })(x);
                  }),
                  {"to_dlpack", "transform"});
}

}  // namespace
}  // namespace strata
