// functionalize on CUDA tensors: writes through select, slice and narrow views
// (made from the value's layout, Note [View layouts]) of a root made inside f
// and of an input, against the same function run eagerly on the CPU.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tests/cuda/cuda_test_support.h"

namespace strata::testing {
namespace {

Tensor grid(int64_t rows, int64_t cols, Device device) {
  return (arange(rows * cols).to(kFloat64).reshape({rows, cols}) * 0.25).to(device);
}

// Writes through views of a transposed clone, nested views with negative
// indices and a step, and a loop of narrow writes read back through an older view.
std::pair<Tensor, Tensor> writes_through_views(const Tensor& x) {
  const Tensor z = x.clone();
  const Tensor t = z.t();
  const Tensor column = t.slice(0, 1, std::nullopt, 2).select(1, -1);
  column.mul_(full({}, 10.0, kFloat64, x.device()));
  for (int64_t i = 0; i < 12; ++i) {
    z.narrow(0, (i * 5) % 6, 2)
        .mul_(full({}, 0.5, kFloat64, x.device()))
        .add_(x.narrow(0, i % 6, 2));
  }
  return {z * 1.0, column * 1.0};
}

void expect_equal_on_cpu(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.device(), cuda(0));
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(got.to(kCPU).to_vector<double>(), want.to_vector<double>());
}

TEST(CudaFunctionalize, WritesThroughViewsMatchEagerOnTheCpu) {
  STRATA_REQUIRE_CUDA();
  const auto [z, column] = writes_through_views(grid(8, 6, kCPU));
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    SCOPED_TRACE(remove == Remove::Mutations ? "Mutations" : "MutationsAndViews");
    const auto [got_z, got_column] =
        functionalize(writes_through_views, remove)(grid(8, 6, cuda(0)));
    expect_equal_on_cpu(got_z, z);
    expect_equal_on_cpu(got_column, column);
  }
}

// A write through a view of the input reaches the caller's tensor on the GPU.
TEST(CudaFunctionalize, WriteThroughAViewOfTheInputIsWrittenBack) {
  STRATA_REQUIRE_CUDA();
  auto f = [](const Tensor& x) {
    x.narrow(0, 1, 2).select(1, 0).mul_(full({}, 3.0, kFloat64, x.device()));
    return x.sum();
  };
  const Tensor expected = grid(4, 3, kCPU);
  const Tensor expected_sum = f(expected);
  const Tensor x = grid(4, 3, cuda(0));
  const Tensor sum = functionalize(f)(x);
  expect_equal_on_cpu(x, expected);
  expect_equal_on_cpu(sum, expected_sum);
}

}  // namespace
}  // namespace strata::testing
