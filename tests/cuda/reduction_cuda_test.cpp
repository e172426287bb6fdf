// The CUDA reductions, scans and sorts where the GPU's order of work differs from
// the CPU's: long groups (reduced in slices by several blocks, then folded again),
// ties and NaNs spread over threads, centered two-pass statistics on values with a
// large offset, and stable sorts. Each checks values known in advance, and the CPU
// kernel's result on the same input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/cuda/cuda_test_support.h"
#include "tests/test_support.h"

namespace strata::testing {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor gpu(const Tensor& t) { return t.to(cuda(0)); }

// Row r's first position holding its max (kMax) or min, read on the host.
std::vector<int64_t> first_extremum(const Tensor& rows, bool max) {
  const std::vector<double> v = rows.to_vector<double>();
  const int64_t n = rows.sizes()[1];
  std::vector<int64_t> first;
  for (int64_t r = 0; r < rows.sizes()[0]; ++r) {
    int64_t best = 0;
    for (int64_t k = 1; k < n; ++k) {
      const double x = v[r * n + k], b = v[r * n + best];
      if (max ? x > b : x < b) best = k;
    }
    first.push_back(best);
  }
  return first;
}

TEST(CudaReduction, ArgExtremaOfLongTiedGroupsPickTheFirstIndex) {
  STRATA_REQUIRE_CUDA();
  // Three rows of 20000 draws from {0, 1, 2}: thousands of tied maxima and minima
  // per row, spread over every thread and over the slices of each row.
  const Tensor draws = randint(0, 3, {3, 20000}, Generator(11));
  for (ScalarType dtype : {kFloat32, kFloat64, kInt64, kBool}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor x = draws.to(dtype);
    const Tensor x_gpu = gpu(x);
    const auto [max_values, max_indices] = x_gpu.max(1);
    const auto [min_values, min_indices] = x_gpu.min(1);
    EXPECT_EQ(max_indices.to_vector<int64_t>(), first_extremum(x, true));
    EXPECT_EQ(min_indices.to_vector<int64_t>(), first_extremum(x, false));
    EXPECT_TRUE(allclose(max_values, x.amax({1}), 0, 0));
    EXPECT_TRUE(allclose(min_values, x.amin({1}), 0, 0));
    EXPECT_EQ(x_gpu.argmax(1).to_vector<int64_t>(), first_extremum(x, true));
    EXPECT_EQ(x_gpu.argmin(1).to_vector<int64_t>(), first_extremum(x, false));
    // Over the flattened tensor, and down the columns of a transposed view.
    EXPECT_TRUE(allclose(x_gpu.argmax(), x.argmax(), 0, 0));
    EXPECT_TRUE(allclose(x_gpu.t().argmin(0, true), x.t().argmin(0, true), 0, 0));
  }
}

TEST(CudaReduction, TheFirstNanWinsEveryExtremumAndPropagates) {
  STRATA_REQUIRE_CUDA();
  Tensor x = randn({2, 10000}, Generator(3), kFloat64);
  std::vector<double> v = x.to_vector<double>();
  v[9000] = kNan;  // row 0: two NaNs, the first at 7000
  v[7000] = kNan;
  v[10000 + 5] = 1e6;  // row 1: no NaN, its max at 5
  x = tensor(v, {2, 10000});
  const Tensor x_gpu = gpu(x);
  const auto [values, indices] = x_gpu.max(1);
  EXPECT_TRUE(std::isnan(values.to_vector<double>()[0]));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{7000, 10005 - 10000}));
  EXPECT_EQ(x_gpu.argmin(1).to_vector<int64_t>()[0], 7000);
  for (const Tensor& r : {x_gpu.amax({1}), x_gpu.logsumexp({1}), x_gpu.var({1}), x_gpu.norm(1, {1}),
                          x_gpu.norm(2, {1}), x_gpu.norm(kInf, {1})}) {
    EXPECT_TRUE(std::isnan(r.to_vector<double>()[0]));
    EXPECT_FALSE(std::isnan(r.to_vector<double>()[1]));
  }
  EXPECT_EQ(x_gpu.norm(kInf, {1}).to_vector<double>()[1], 1e6);
}

TEST(CudaReduction, LogsumexpIsShiftedAndKeepsInfinities) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = tensor({1000, 1000, 1000, -kInf, -kInf, -kInf, kInf, 1, 2}, {3, 3});
  const std::vector<double> r = gpu(x).logsumexp({1}).to_vector<double>();
  EXPECT_NEAR(r[0], 1000 + std::log(3.0), 1e-12);
  EXPECT_EQ(r[1], -kInf);
  EXPECT_EQ(r[2], kInf);
  EXPECT_EQ(gpu(zeros({2, 0}, kFloat64)).logsumexp({1}).to_vector<double>()[0], -kInf);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const Tensor y = randn({5, 30000}, Generator(4), dtype) * 30.0;
    const double tol = dtype == kFloat32 ? 1e-5 : 1e-12;
    EXPECT_TRUE(allclose(gpu(y).logsumexp({1}), y.logsumexp({1}), tol, tol));
    EXPECT_TRUE(allclose(gpu(y).logsumexp({0, 1}), y.logsumexp({0, 1}), tol, tol));
  }
}

TEST(CudaReduction, VarianceIsTwoPassAndHonoursTheCorrection) {
  STRATA_REQUIRE_CUDA();
  // 1e9 + 0, 1, ..., n - 1: a one-pass sum of squares loses every digit of this
  // variance in double; the exact value is (n^2 - 1) / 12 * n / (n - correction).
  const int64_t n = 10000;
  const Tensor x = arange(0, n, 1, kFloat64) + 1e9;
  const double population = (static_cast<double>(n) * n - 1) / 12;
  for (int64_t correction : {0, 1, 2}) {
    SCOPED_TRACE(correction);
    const double expected = population * n / static_cast<double>(n - correction);
    EXPECT_NEAR(gpu(x).var({0}, correction).to_vector<double>()[0], expected, 1e-9 * expected);
    EXPECT_NEAR(gpu(x).std({0}, correction).to_vector<double>()[0], std::sqrt(expected),
                1e-9 * std::sqrt(expected));
  }
  // One element with correction 1: no degrees of freedom, NaN as on the CPU.
  EXPECT_TRUE(std::isnan(gpu(ones({1}, kFloat64)).var({0}).to_vector<double>()[0]));
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const Tensor y = randn({4, 3, 5000}, Generator(5), dtype) + 100.0;
    const double tol = dtype == kFloat32 ? 1e-5 : 1e-10;
    EXPECT_TRUE(allclose(gpu(y).var({0, 2}, 1, true), y.var({0, 2}, 1, true), tol, tol));
    EXPECT_TRUE(allclose(gpu(y).std({2}, 0), y.std({2}, 0), tol, tol));
    EXPECT_TRUE(allclose(gpu(y.transpose(0, 2)).var({1}, 3), y.transpose(0, 2).var({1}, 3), tol,
                         tol));
  }
}

TEST(CudaReduction, NormsOfLongGroupsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  const Tensor ones_gpu = gpu(ones({100000}, kFloat32));
  // Float32 results: within a few ulps of the exact values.
  EXPECT_NEAR(ones_gpu.norm(1).to_vector<double>()[0], 1e5, 1e-6 * 1e5);
  EXPECT_NEAR(ones_gpu.norm(2).to_vector<double>()[0], std::sqrt(1e5), 1e-6 * std::sqrt(1e5));
  EXPECT_EQ(ones_gpu.norm(kInf).to_vector<double>()[0], 1.0);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const Tensor y = randn({3, 50000}, Generator(6), dtype);
    const double tol = dtype == kFloat32 ? 1e-5 : 1e-12;
    for (double p : {1.0, 2.0, kInf}) {
      SCOPED_TRACE(p);
      EXPECT_TRUE(allclose(gpu(y).norm(p, {1}), y.norm(p, {1}), tol, tol));
      EXPECT_TRUE(allclose(gpu(y).norm(p), y.norm(p), tol, tol));
    }
  }
}

// sum, mean, prod, amax and amin share the reducer tree with the ops above.
TEST(CudaReduction, SumsAndExtremaOfLongGroupsMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  const Tensor y = randn({2, 40000}, Generator(7), kFloat32);
  EXPECT_TRUE(allclose(gpu(y).sum({1}), y.sum({1}), 1e-4, 1e-5));
  EXPECT_TRUE(allclose(gpu(y).mean({0, 1}), y.mean({0, 1}), 1e-6, 1e-5));
  EXPECT_TRUE(allclose(gpu(y).amax({1}), y.amax({1}), 0, 0));
  EXPECT_TRUE(allclose(gpu(y).amin({0}), y.amin({0}), 0, 0));
  const Tensor k = randint(-50, 50, {3, 9000}, Generator(8));
  EXPECT_TRUE(allclose(gpu(k).sum({1}), k.sum({1}), 0, 0));
  EXPECT_TRUE(allclose(gpu(k > 0).sum({1}), (k > 0).sum({1}), 0, 0));
  const Tensor near_one = rand({4, 5000}, Generator(9), kFloat64) * 0.01 + 0.995;
  EXPECT_TRUE(allclose(gpu(near_one).prod(1), near_one.prod(1), 1e-12, 1e-10));
}

TEST(CudaLinalg, DotMatchesTheCpu) {
  STRATA_REQUIRE_CUDA();
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const Tensor a = randn({1000}, Generator(1), dtype);
    const Tensor b = randn({2000}, Generator(2), dtype);
    const double tol = dtype == kFloat32 ? 1e-4 : 1e-12;
    // Every other element: a strided operand on either device.
    EXPECT_TRUE(allclose(gpu(a).dot(gpu(b).slice(0, 0, 2000, 2)), a.dot(b.slice(0, 0, 2000, 2)),
                         tol, tol));
  }
  const Tensor i = arange(1, 101, 1, kInt64);
  EXPECT_EQ(gpu(i).dot(gpu(i)).to_vector<int64_t>()[0], 100 * 101 * 201 / 6);
  EXPECT_EQ(gpu(zeros({0}, kFloat64)).dot(gpu(zeros({0}, kFloat64))).to_vector<double>()[0], 0.0);
}

// A repeated letter or a letter summed within one operand makes einsum run the
// loop nest; "ijk,jk->i" runs the pairwise products, for comparison.
TEST(CudaLinalg, EinsumLoopNestMatchesTheCpu) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = randn({4, 4}, Generator(8), kFloat64);
  EXPECT_NEAR(einsum("ii->", {gpu(x)}).to_vector<double>()[0],
              x.diagonal().sum().to_vector<double>()[0], 1e-12);
  const Tensor a = randn({3, 5, 2}, Generator(9), kFloat32);
  const Tensor b = randn({5, 2}, Generator(10), kFloat32);
  for (const char* equation : {"ijk,jk->i", "ijk,jk->ik", "ijk->ki"}) {
    SCOPED_TRACE(equation);
    const std::vector<Tensor> on_gpu =
        std::string(equation).find(',') == std::string::npos
            ? std::vector<Tensor>{gpu(a)}
            : std::vector<Tensor>{gpu(a), gpu(b)};
    const std::vector<Tensor> on_cpu = std::string(equation).find(',') == std::string::npos
                                           ? std::vector<Tensor>{a}
                                           : std::vector<Tensor>{a, b};
    EXPECT_TRUE(allclose(einsum(equation, on_gpu), einsum(equation, on_cpu), 1e-5, 1e-5));
  }
  const Tensor k = randint(-3, 3, {3, 3, 3}, Generator(11));
  EXPECT_TRUE(allclose(einsum("iij->j", {gpu(k)}), einsum("iij->j", {k}), 0, 0));
}

TEST(CudaScanSort, CumsumMatchesTheCpuAlongEveryDim) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = randn({4, 5, 6}, Generator(3), kFloat64);
  const Tensor k = randint(-9, 9, {4, 5, 6}, Generator(4));
  for (int64_t dim : {0, 1, 2, -1}) {
    SCOPED_TRACE(dim);
    EXPECT_TRUE(allclose(gpu(x).cumsum(dim), x.cumsum(dim), 0, 0));
    EXPECT_TRUE(allclose(gpu(k).cumsum(dim), k.cumsum(dim), 0, 0));
    EXPECT_TRUE(allclose(gpu(k > 0).cumsum(dim), (k > 0).cumsum(dim), 0, 0));
  }
  EXPECT_EQ(gpu(tensor({1, 2, 3, 4})).cumsum(0).to_vector<double>(),
            (std::vector<double>{1, 3, 6, 10}));
}

// Lanes of 2048 and more are scanned a block at a time, so float sums are grouped
// differently from the CPU's running sum: equal to rounding (float32 running
// sums of 10^5 normals drift by ~1e-2), integers exactly.
TEST(CudaScanSort, CumsumOfLongLanesMatchesTheCpu) {
  STRATA_REQUIRE_CUDA();
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{2048}, {100003}, {3, 4097}, {5, 2, 3000}}) {
    SCOPED_TRACE(shape.back());
    const Tensor x = randn(shape, Generator(5), kFloat64);
    const Tensor k = randint(-9, 9, shape, Generator(6));
    EXPECT_TRUE(allclose(gpu(x).cumsum(-1), x.cumsum(-1), 1e-10, 1e-9));
    EXPECT_TRUE(allclose(gpu(x.to(kFloat32)).cumsum(-1), x.to(kFloat32).cumsum(-1), 1e-4, 5e-2));
    EXPECT_TRUE(allclose(gpu(k).cumsum(-1), k.cumsum(-1), 0, 0));
  }
  EXPECT_EQ(gpu(ones({70000}, kInt64)).cumsum(0).to_vector<int64_t>().back(), 70000);
}

TEST(CudaScanSort, SortIsStableWithNanLastAscendingAndFirstDescending) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = tensor({3, kNan, 1, 3, -0.0, 0.0, kNan, 1});
  const auto [up, up_index] = gpu(x).sort(0);
  EXPECT_EQ(up_index.to_vector<int64_t>(), (std::vector<int64_t>{4, 5, 2, 7, 0, 3, 1, 6}));
  const auto [down, down_index] = gpu(x).sort(0, true);
  EXPECT_EQ(down_index.to_vector<int64_t>(), (std::vector<int64_t>{1, 6, 0, 3, 2, 7, 4, 5}));
  EXPECT_TRUE(allclose(down, std::get<0>(x.sort(0, true)), 0, 0));
  const Tensor k = randint(0, 4, {5, 7, 3}, Generator(5));
  for (int64_t dim : {0, 1, 2}) {
    for (bool descending : {false, true}) {
      SCOPED_TRACE(std::to_string(dim) + (descending ? " descending" : ""));
      const auto [values, indices] = gpu(k).sort(dim, descending);
      const auto [cpu_values, cpu_indices] = k.sort(dim, descending);
      EXPECT_TRUE(allclose(values, cpu_values, 0, 0));
      EXPECT_TRUE(allclose(indices, cpu_indices, 0, 0));
    }
  }
  const auto [top, top_index] = gpu(k.to(kFloat32)).topk(2, 1);
  EXPECT_TRUE(allclose(top_index, std::get<1>(k.to(kFloat32).topk(2, 1)), 0, 0));
  EXPECT_TRUE(allclose(top, std::get<0>(k.to(kFloat32).topk(2, 1)), 0, 0));
}

// Lanes longer than 1024 take the radix sort (Note [CUDA sort]): many ties, NaNs,
// and both zeros, along the last dim and along dim 0 (lanes `inner` apart).
TEST(CudaScanSort, LongLanesSortStablyAsOnTheCpu) {
  STRATA_REQUIRE_CUDA();
  const Tensor ints = randint(-20, 20, {3, 3000}, Generator(12));
  std::vector<double> v = (ints.to(kFloat64) * 0.5).to_vector<double>();
  for (size_t i = 0; i < v.size(); i += 97) v[i] = kNan;
  for (size_t i = 5; i < v.size(); i += 89) v[i] = -0.0;
  const Tensor x64 = tensor(v, {3, 3000});
  for (const Tensor& x : {x64, x64.to(kFloat32), ints, ints > 0}) {
    const ScalarType dtype = x.dtype();
    for (bool descending : {false, true}) {
      for (int64_t dim : {1, 0}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " dim " + std::to_string(dim) +
                     (descending ? " descending" : ""));
        const Tensor lanes = dim == 1 ? x : x.t().contiguous();  // [3000, 3] sorts down dim 0
        const auto [values, indices] = gpu(lanes).sort(dim, descending);
        const auto [cpu_values, cpu_indices] = lanes.sort(dim, descending);
        EXPECT_TRUE(allclose(indices, cpu_indices, 0, 0));
        EXPECT_TRUE(allclose(values, cpu_values, 0, 0));
      }
    }
  }
  const auto [top, top_index] = gpu(x64).topk(5, 1, false);
  EXPECT_TRUE(allclose(top_index, std::get<1>(x64.topk(5, 1, false)), 0, 0));
  EXPECT_TRUE(allclose(top, std::get<0>(x64.topk(5, 1, false)), 0, 0));
}

TEST(CudaPad, ConstantPadAndCropMatchTheCpu) {
  STRATA_REQUIRE_CUDA();
  const Tensor x = randn({2, 3, 4}, Generator(6), kFloat32);
  for (const std::vector<int64_t>& pads :
       {std::vector<int64_t>{1, 2}, {0, 0, 2, 1}, {-1, 2, 1, -2}, {1, 1, 1, 1, 1, 1}}) {
    const Tensor padded = nn::pad(gpu(x), pads, "constant", 2.5);
    EXPECT_TRUE(padded.device().is_cuda());
    EXPECT_TRUE(allclose(padded, nn::pad(x, pads, "constant", 2.5), 0, 0));
  }
}

}  // namespace
}  // namespace strata::testing
