// Advanced indexing on the GPU: index, index_put (with and without accumulate,
// repeated positions included) and masked_select, whose plans read the index
// values on the host and whose data moves on the device. Each against values
// known in advance and the CPU's result on the same inputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cuda/cuda_test_support.h"
#include "tests/test_support.h"

namespace strata::testing {
namespace {

Tensor gpu(const Tensor& t) { return t.to(cuda(0)); }

TEST(CudaIndexing, IndexPicksRowsWithNegativeAndRepeatedIndices) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = arange(0, 12, 1, kFloat32).view({4, 3});
  const Tensor rows = tensor(std::vector<int64_t>{3, -4, 3});
  const Tensor picked = gpu(x).index({gpu(rows)});
  EXPECT_TRUE(picked.device().is_cuda());
  EXPECT_EQ(picked.to_vector<double>(), (std::vector<double>{9, 10, 11, 0, 1, 2, 9, 10, 11}));
  const Tensor cols = tensor(std::vector<int64_t>{2, 0, 1});
  EXPECT_TRUE(allclose(gpu(x).index({gpu(rows), gpu(cols)}), x.index({rows, cols}), 0, 0));
  const Tensor mask = x.sum({1}) > 10.0;  // rows 1, 2, 3
  EXPECT_TRUE(allclose(gpu(x).index({gpu(mask)}), x.index({mask}), 0, 0));
  EXPECT_TRUE(allclose(gpu(x).masked_select(gpu(x > 4.0)), x.masked_select(x > 4.0), 0, 0));
  const std::string message =
      error_message([&] { gpu(x).index({gpu(tensor(std::vector<int64_t>{4}))}); });
  EXPECT_NE(message.find("strata::index"), std::string::npos) << message;
}

TEST(CudaIndexing, IndexPutKeepsTheLastWriteOrSumsRepeats) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = zeros({5, 2}, kFloat64);
  const Tensor at = tensor(std::vector<int64_t>{1, 3, 1, 1});
  const Tensor values = tensor({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  // Without accumulate the last of the three writes to row 1 stays, as on the CPU.
  const Tensor put = gpu(x).index_put({gpu(at)}, gpu(values), false);
  EXPECT_EQ(put.to_vector<double>(), (std::vector<double>{0, 0, 7, 8, 0, 0, 3, 4, 0, 0}));
  const Tensor summed = gpu(x).index_put({gpu(at)}, gpu(values), true);
  EXPECT_EQ(summed.to_vector<double>(), (std::vector<double>{0, 0, 13, 16, 0, 0, 3, 4, 0, 0}));
  // In place, with a broadcast value, on every dtype.
  for (ScalarType dtype : {kFloat32, kInt64, kBool}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor target = gpu(zeros({5, 2}, dtype));
    target.index_put_({gpu(at)}, gpu(ones({2}, dtype)), true);
    EXPECT_TRUE(allclose(target, zeros({5, 2}, dtype).index_put({at}, ones({2}, dtype), true), 0,
                         0));
  }
}

// Slices (undefined entries) are rewritten into aranges on self's device.
TEST(CudaIndexing, SlicesKeepAdjacentIndicesInPlaceAndPutSeparatedOnesFirst) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = arange(0, 24, 1, kFloat32).view({2, 3, 4});
  const Tensor i = tensor(std::vector<int64_t>{3, 0});
  const Tensor j = tensor(std::vector<int64_t>{1, 0});
  const Tensor mask = tensor(std::vector<bool>{true, false, true});
  for (const std::vector<Tensor>& at :
       std::vector<std::vector<Tensor>>{{Tensor(), Tensor(), i},
                                        {j, Tensor(), i},
                                        {Tensor(), mask},
                                        {mask.narrow(0, 0, 2), Tensor(), i}}) {
    std::vector<Tensor> on_gpu;
    for (const Tensor& t : at) on_gpu.push_back(t.defined() ? gpu(t) : t);
    const Tensor picked = gpu(x).index(on_gpu);
    EXPECT_TRUE(picked.device().is_cuda());
    EXPECT_TRUE(allclose(picked, x.index(at), 0, 0));
    EXPECT_TRUE(allclose(gpu(x).index_put(on_gpu, gpu(ones({1})), true),
                         x.index_put(at, ones({1}), true), 0, 0));
  }
}

}  // namespace
}  // namespace strata::testing
