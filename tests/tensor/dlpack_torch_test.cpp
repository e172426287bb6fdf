// DLPack against PyTorch 1.13 (libtorch's at::toDLPack / at::fromDLPack): a tensor
// passed each way keeps its values, sizes and strides, shares the one buffer (a
// write on one side is seen on the other) and keeps its owner alive; each side's
// deleter runs when the other side's last tensor dies. Built only with
// -DSTRATA_TORCH_DLPACK_CHECK=ON (needs libtorch-dev); scripts/dlpack_torch_check.sh
// builds and runs it. The suite without libtorch has tests/tensor/dlpack_test.cpp.
#include <ATen/DLConvertor.h>
#include <gtest/gtest.h>
#include <strata/strata.h>
#include <torch/torch.h>

#include <vector>

#include "tests/test_support.h"

namespace {

namespace st = strata;

std::vector<double> values_of(const at::Tensor& t) {
  const at::Tensor flat = t.to(at::kDouble).contiguous().reshape({-1});
  return std::vector<double>(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
}

std::vector<int64_t> vec(c10::IntArrayRef r) { return {r.begin(), r.end()}; }
std::vector<int64_t> vec(st::IntArrayRef r) { return {r.begin(), r.end()}; }

struct DtypePair {
  st::ScalarType ours;
  at::ScalarType theirs;
};
const DtypePair kDtypes[] = {{st::kFloat32, at::kFloat},
                             {st::kFloat64, at::kDouble},
                             {st::kInt64, at::kLong}};

TEST(DLPackTorch, StrataTensorIntoTorchWithoutACopy) {
  for (const DtypePair& d : kDtypes) {
    // Transposed: strides {1, 4}, which torch must keep rather than copy.
    st::Tensor ours = st::arange(12).to(d.ours).reshape({3, 4}).t();
    const std::vector<double> values = ours.to_vector<double>();
    void* data = ours.data_ptr();
    at::Tensor theirs = at::fromDLPack(st::to_dlpack(ours));
    EXPECT_EQ(theirs.scalar_type(), d.theirs);
    EXPECT_EQ(theirs.data_ptr(), data);
    EXPECT_EQ(vec(theirs.sizes()), vec(ours.sizes()));
    EXPECT_EQ(vec(theirs.strides()), vec(ours.strides()));
    EXPECT_EQ(values_of(theirs), values);
    ours = st::Tensor();  // torch's tensor keeps the memory alive
    EXPECT_EQ(values_of(theirs), values);
    st::Tensor back = st::from_dlpack(st::to_dlpack(st::from_dlpack(at::toDLPack(theirs))));
    theirs.mul_(3);  // one buffer: torch's write is seen by Strata
    std::vector<double> tripled = values;
    for (double& v : tripled) v *= 3;
    EXPECT_EQ(back.to_vector<double>(), tripled);
  }
}

TEST(DLPackTorch, TorchTensorIntoStrataWithoutACopy) {
  for (const DtypePair& d : kDtypes) {
    at::Tensor theirs = torch::arange(24, at::TensorOptions().dtype(d.theirs)).reshape({2, 3, 4});
    at::Tensor strided = theirs.permute({2, 0, 1}).slice(0, 1, 4, 2);  // strides {2, 12, 4}
    {
      st::Tensor ours = st::from_dlpack(at::toDLPack(strided));
      EXPECT_EQ(ours.dtype(), d.ours);
      EXPECT_EQ(ours.data_ptr(), strided.data_ptr());
      EXPECT_EQ(vec(ours.sizes()), vec(strided.sizes()));
      EXPECT_EQ(vec(ours.strides()), vec(strided.strides()));
      EXPECT_EQ(ours.to_vector<double>(), values_of(strided));
      ours.fill_(5);  // one buffer: Strata's write is seen by torch
      EXPECT_EQ(values_of(strided), std::vector<double>(static_cast<size_t>(strided.numel()), 5.0));
      theirs = at::Tensor();
      strided = at::Tensor();  // the capsule keeps torch's storage alive
      EXPECT_EQ(ours.to_vector<double>(), std::vector<double>(static_cast<size_t>(ours.numel()), 5.0));
    }
  }
}

TEST(DLPackTorch, TorchsDeleterRunsWhenTheLastStrataTensorDies) {
  const at::Tensor theirs = torch::ones({4}, at::kDouble);
  const int64_t before = theirs.use_count();  // torch's capsule holds a reference
  {
    st::Tensor ours = st::from_dlpack(at::toDLPack(theirs));
    EXPECT_EQ(theirs.use_count(), before + 1);
    const st::Tensor view = ours.select(0, 2);
    ours = st::Tensor();
    EXPECT_EQ(theirs.use_count(), before + 1);  // the view still uses the memory
    EXPECT_EQ(view.to_vector<double>(), std::vector<double>{1.0});
  }
  EXPECT_EQ(theirs.use_count(), before);
}

TEST(DLPackTorch, StratasDeleterRunsWhenTheLastTorchTensorDies) {
  const st::Tensor ours = st::ones({4}, st::kFloat64);
  const uint32_t before = ours.impl()->use_count();
  {
    at::Tensor theirs = at::fromDLPack(st::to_dlpack(ours));
    EXPECT_EQ(ours.impl()->use_count(), before + 1);  // the capsule holds a reference
    const at::Tensor view = theirs.select(0, 1);
    theirs = at::Tensor();
    EXPECT_EQ(ours.impl()->use_count(), before + 1);  // torch's view still uses it
  }
  EXPECT_EQ(ours.impl()->use_count(), before);
}

// PyTorch 1.13 predates DLPack's boolean code (0.8): it refuses booleans both ways,
// with its own error, and leaves the capsule with its owner.
TEST(DLPackTorch, Torch113ExchangesNoBooleans) {
  const st::Tensor mask = st::tensor(std::vector<double>{1, 0, 2}) > 0.5;
  DLManagedTensor* m = st::to_dlpack(mask);
  EXPECT_THROW(at::fromDLPack(m), c10::Error);
  m->deleter(m);
  EXPECT_THROW(at::toDLPack(torch::tensor({true, false})), c10::Error);
}

TEST(DLPackTorch, TorchDtypesStrataLacksAreAClearErrorAndTheCapsuleIsNotTaken) {
  for (const at::ScalarType dtype : {at::kHalf, at::kInt, at::kComplexFloat}) {
    at::Tensor theirs = torch::zeros({2, 2}, at::TensorOptions().dtype(dtype));
    DLManagedTensor* m = at::toDLPack(theirs);
    const std::string message = st::testing::error_message([&] { st::from_dlpack(m); });
    st::testing::expect_contains(message, {"from_dlpack"});
    m->deleter(m);  // not taken: the caller still owns it
  }
}

}  // namespace
