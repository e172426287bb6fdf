// DLPack exchange of CUDA tensors: the device pointer, device id, sizes and strides
// go out unchanged, and a capsule of device memory comes back as a tensor on that
// device that owns it. Skipped without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "tests/cuda/cuda_test_support.h"

namespace strata::testing {
namespace {

TEST(CudaDLPack, ExportKeepsTheDevicePointerAndTheLayout) {
  STRATA_REQUIRE_CUDA();
  const Tensor t = arange(6).to(kFloat32).reshape({2, 3}).to(cuda(0)).t();  // strides {1, 3}
  DLManagedTensor* m = to_dlpack(t);
  const DLTensor& dl = m->dl_tensor;
  EXPECT_EQ(dl.data, t.data_ptr());
  EXPECT_EQ(dl.device.device_type, kDLCUDA);
  EXPECT_EQ(dl.device.device_id, 0);
  EXPECT_EQ(dl.strides[0], 1);
  EXPECT_EQ(dl.strides[1], 3);
  m->deleter(m);
}

TEST(CudaDLPack, RoundTripSharesDeviceMemory) {
  STRATA_REQUIRE_CUDA();
  const Tensor t = arange(12).to(kFloat64).reshape({3, 4}).to(cuda(0));
  Tensor back = from_dlpack(to_dlpack(t.narrow(1, 1, 2)));
  EXPECT_EQ(back.device(), cuda(0));
  EXPECT_EQ(back.data_ptr(), t.narrow(1, 1, 2).data_ptr());
  EXPECT_EQ(back.strides()[0], 4);
  EXPECT_EQ(back.to(kCPU).to_vector<double>(), (std::vector<double>{1, 2, 5, 6, 9, 10}));
  back.fill_(10.0);  // a write through the import is seen by the exporter
  EXPECT_EQ(t.to(kCPU).to_vector<double>(),
            (std::vector<double>{0, 10, 10, 3, 4, 10, 10, 7, 8, 10, 10, 11}));
}

}  // namespace
}  // namespace strata::testing
