// Numerical soundness of the reductions where a naive loop would fail: long
// float32 sums, logsumexp of large values, variance of values far from zero, and
// results that must not depend on the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "strata/strata.h"

namespace st = strata;

namespace {

// 2^24 + 2^22 float32 ones: a float accumulator stops growing at 2^24.
TEST(ReductionNumerics, LongFloat32SumIsExactForOnes) {
  const int64_t n = (int64_t{1} << 24) + (int64_t{1} << 22);
  const st::Tensor ones = st::ones({n}, st::kFloat32);
  EXPECT_EQ(ones.sum().item<double>(), static_cast<double>(n));
  EXPECT_EQ(ones.mean().item<double>(), 1.0);
}

// A value that float32 cannot hold exactly: the rounding of each addition would
// pile up in a float accumulator, over rows (innermost dim) and columns (outer dim).
TEST(ReductionNumerics, LongFloat32SumsStayAccurate) {
  const int64_t rows = 1 << 20, cols = 4;
  const st::Tensor x = st::full({rows, cols}, 0.1, st::kFloat32);
  const double value = static_cast<double>(0.1f);
  const double expected_all = value * static_cast<double>(rows * cols);
  EXPECT_NEAR(x.sum().item<double>(), expected_all, 1e-6 * expected_all);
  for (double s : x.sum({0}).to_vector<double>()) {
    EXPECT_NEAR(s, value * rows, 1e-6 * value * rows);
  }
  const st::Tensor transposed(st::make_intrusive<st::TensorImpl>(
      x.impl()->storage(), x.dtype(), st::IntArrayRef{cols, rows}, st::IntArrayRef{1, cols}, 0));
  for (double s : transposed.sum({1}).to_vector<double>()) {
    EXPECT_NEAR(s, value * rows, 1e-6 * value * rows);
  }
}

TEST(ReductionNumerics, LogsumexpOfLargeValuesDoesNotOverflow) {
  const st::Tensor big = st::tensor({1000.0, 1000.0, -1000.0, -1000.0}, {2, 2});
  const std::vector<double> lse = big.logsumexp({1}).to_vector<double>();
  EXPECT_NEAR(lse[0], 1000.0 + std::log(2.0), 1e-9);
  EXPECT_NEAR(lse[1], -1000.0 + std::log(2.0), 1e-9);
  const st::Tensor big32 = st::tensor(std::vector<float>{100.0f, 100.0f}, {2});
  EXPECT_NEAR(big32.logsumexp({0}).item<double>(), 100.0 + std::log(2.0), 1e-4);
}

// One-pass E[x^2] - E[x]^2 in float32 loses every digit here; two passes do not.
TEST(ReductionNumerics, VarianceOfValuesFarFromZero) {
  const st::Tensor x = st::tensor(std::vector<float>{10000.0f, 10001.0f, 10002.0f, 10003.0f}, {4});
  EXPECT_NEAR(x.var().item<double>(), 5.0 / 3.0, 1e-5);
  EXPECT_NEAR(x.std({}, 0).item<double>(), std::sqrt(1.25), 1e-5);
}

// Groups are cut into blocks by shape alone, so the thread count cannot change a
// float32 result.
TEST(ReductionNumerics, ResultsDoNotDependOnThreadCount) {
  std::vector<float> values(1 << 21);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>((i * 7919) % 1013) * 0.37f;
  const st::Tensor x = st::tensor(values, {static_cast<int64_t>(values.size())});
  const st::Tensor m = st::tensor(values, {1 << 11, 1 << 10});
  const double sum_default = x.sum().item<double>();
  const std::vector<double> cols_default = m.sum({0}).to_vector<double>();
  st::cpu::set_num_threads(1);
  const double sum_one = x.sum().item<double>();
  const std::vector<double> cols_one = m.sum({0}).to_vector<double>();
  st::cpu::set_num_threads(0);
  EXPECT_EQ(sum_default, sum_one);
  EXPECT_EQ(cols_default, cols_one);
}

}  // namespace

namespace strata {
namespace {

// Short reduced dims with many wide rows: each group is smaller than one
// parallel block (this once divided by zero).
TEST(ReductionNumerics, ShortGroupsOfWideRows) {
  Generator gen(3);
  const Tensor x = randn({32, 16, 128}, gen, kFloat64);
  const Tensor summed = x.sum({1});
  const std::vector<double> values = x.to_vector<double>();
  const std::vector<double> got = summed.to_vector<double>();
  for (int64_t i = 0; i < 32; ++i) {
    for (int64_t k = 0; k < 128; ++k) {
      double expected = 0.0;
      for (int64_t j = 0; j < 16; ++j)
        expected += values[static_cast<size_t>((i * 16 + j) * 128 + k)];
      EXPECT_NEAR(got[static_cast<size_t>(i * 128 + k)], expected, 1e-12);
    }
  }
}

// Reducing dims of extent 1 leaves each element alone (the column loop with
// groups of one), on a contiguous and a transposed input and widened to Int64.
TEST(ReductionNumerics, DimsOfExtentOne) {
  Generator gen(4);
  const Tensor x = randn({37, 1, 129}, gen, kFloat64);
  const std::vector<double> values = x.to_vector<double>();
  auto expect_each = [&](const Tensor& got, auto expected) {
    const std::vector<double> v = got.to_vector<double>();
    ASSERT_EQ(v.size(), values.size());
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected(values[i]), 1e-12) << i;
  };
  auto same = [](double a) { return a; };
  expect_each(x.sum({1}), same);
  expect_each(x.mean({1}, true), same);
  expect_each(x.prod(1), same);
  expect_each(x.amax({1}), same);
  expect_each(x.norm(2, {1}), [](double a) { return std::abs(a); });
  expect_each(x.norm(1, {1}), [](double a) { return std::abs(a); });
  const Tensor t = x.permute({2, 1, 0});  // [129, 1, 37], kept dims strided
  const std::vector<double> permuted = t.sum({1}).t().contiguous().to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(permuted[i], values[i]) << i;
  const Tensor ints = arange(12, kInt64).reshape({3, 1, 4});
  EXPECT_EQ(ints.sum({1}).to_vector<int64_t>(), arange(12, kInt64).to_vector<int64_t>());
  EXPECT_EQ(ints.sum({1}).dtype(), kInt64);
}

// The rows of a [17, 301] matrix start at every offset from a packet boundary;
// each row's reductions over dim 1 (the vectorised row fold: every kind of sum,
// and prod) must give the bits of the same reductions of the row's own aligned
// copy, and its sum and prod the values of double loops (Note [Sums do not depend
// on the address]).
TEST(ReductionNumerics, RowReductionsDoNotDependOnWhereARowStarts) {
  const int64_t rows = 17, cols = 301;
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    // Values near 1, so that products neither vanish nor overflow.
    const Tensor x =
        ((arange(rows * cols, kFloat64) * 0.61).sin() * 0.3 + 1).to(dtype).reshape({rows, cols});
    const std::vector<double> values = x.to_vector<double>();
    auto each_row = [](const Tensor& t) {
      const int64_t last = t.dim() - 1;
      return std::vector<Tensor>{t.sum({last}),      t.prod(last),      t.mean({last}),
                                 t.var({last}),      t.norm(1, {last}), t.norm(2, {last}),
                                 t.logsumexp({last})};
    };
    const std::vector<Tensor> by_row = each_row(x);
    const double tolerance = dtype == kFloat32 ? 1e-5 : 1e-12;
    for (int64_t i = 0; i < rows; ++i) {
      const std::vector<Tensor> of_copy = each_row(x.select(0, i).clone());
      for (size_t k = 0; k < by_row.size(); ++k) {
        EXPECT_EQ(by_row[k].select(0, i).to(kFloat64).item<double>(),
                  of_copy[k].to(kFloat64).item<double>())
            << dtype << " row " << i << " reduction " << k;
      }
      double sum = 0, prod = 1;
      for (int64_t j = 0; j < cols; ++j) {
        sum += values[static_cast<size_t>(i * cols + j)];
        prod *= values[static_cast<size_t>(i * cols + j)];
      }
      EXPECT_NEAR(by_row[0].select(0, i).to(kFloat64).item<double>(), sum, tolerance * sum);
      EXPECT_NEAR(by_row[1].select(0, i).to(kFloat64).item<double>(), prod, 1e2 * tolerance * prod);
    }
  }
}

}  // namespace
}  // namespace strata
