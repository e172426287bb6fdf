// What the op table's value checks do not see: aliasing and versions of copies and
// in-place ops, NaN handling, exact integer math, and tensors large enough to run
// the parallel path of the elementwise driver.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <limits>

#include "tensor/shape_inference.h"

namespace st = strata;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The transpose of a 2-D tensor, as a view (independent of the shape ops).
st::Tensor transposed(const st::Tensor& t) {
  return st::Tensor(st::make_intrusive<st::TensorImpl>(
      t.impl()->storage(), t.dtype(), st::IntArrayRef({t.sizes()[1], t.sizes()[0]}),
      st::IntArrayRef({t.strides()[1], t.strides()[0]}), t.storage_offset()));
}

// A [rows, cols] Float32 view of a [cols, rows] tensor holding i * 1e-5 - 1.
st::Tensor transposed_ramp(int64_t rows, int64_t cols) {
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 1e-5f - 1.0f;
  return transposed(st::tensor(values, {cols, rows}));
}

TEST(ElementwiseSemantics, CloneCopiesIntoNewContiguousStorage) {
  const st::Tensor x = transposed(st::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3}));
  const st::Tensor c = x.clone();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.data_ptr(), x.data_ptr());
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  c.fill_(0.0);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

// Copies of views whose source is unit-stride along an outer dim (Note [Tiled
// transposing copy]): 2-D transposes whose sides are and are not whole packets and
// tiles, at odd offsets (unaligned packets), large enough to run in parallel; a
// permuted 3-D view whose unit-stride dim is the outermost; views whose row dim
// steps over values (a transposed slice with a step); same-dtype and converting
// copies. Each element must be the value at its address in the base.
TEST(ElementwiseSemantics, TransposedCopiesHoldTheValuesAtTheirAddresses) {
  struct Case {
    std::vector<int64_t> sizes, strides;
    int64_t offset;
  };
  const Case cases[] = {{{64, 48}, {1, 64}, 0},
                        {{37, 53}, {1, 40}, 3},
                        {{300, 500}, {1, 301}, 1},
                        {{19, 7, 5}, {1, 19, 133}, 0},
                        {{33, 4, 21}, {1, 33 * 21, 33}, 5},
                        {{37, 29}, {2, 80}, 1},
                        {{9, 5, 13}, {3, 400, 30}, 2}};
  for (const Case& c : cases) {
    int64_t extent = c.offset + 1, count = 1;
    for (size_t d = 0; d < c.sizes.size(); ++d) {
      extent += (c.sizes[d] - 1) * c.strides[d];
      count *= c.sizes[d];
    }
    // Distinct integers, exact in every dtype below.
    const st::Tensor ramp = st::arange(extent).to(st::kFloat64);
    std::vector<double> expected;
    std::vector<int64_t> index(c.sizes.size(), 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t at = c.offset;
      for (size_t d = 0; d < index.size(); ++d) at += index[d] * c.strides[d];
      expected.push_back(static_cast<double>(at));
      for (size_t d = index.size(); d-- > 0 && ++index[d] == c.sizes[d];) index[d] = 0;
    }
    for (st::ScalarType dtype : {st::kFloat32, st::kFloat64, st::kInt64}) {
      const st::Tensor base = ramp.to(dtype);
      const st::Tensor view(st::make_intrusive<st::TensorImpl>(
          base.impl()->storage(), dtype, st::IntArrayRef(c.sizes), st::IntArrayRef(c.strides),
          c.offset));
      const st::ScalarType other = dtype == st::kFloat64 ? st::kFloat32 : st::kFloat64;
      for (const st::Tensor& copy : {view.contiguous(), view.to(other)}) {
        ASSERT_TRUE(copy.is_contiguous());
        EXPECT_EQ(copy.to_vector<double>(), expected)
            << dtype << " to " << copy.dtype() << ", shape " << st::shape_string(c.sizes);
      }
    }
  }
}

// Int64 values move through the transposing copy as the bits of double lanes:
// every pattern, NaN and subnormal ones as doubles included, must arrive intact.
TEST(ElementwiseSemantics, TransposedInt64CopiesKeepEveryBitPattern) {
  const int64_t rows = 24, cols = 40;
  std::vector<int64_t> values(static_cast<size_t>(rows * cols));
  uint64_t bits = 1;
  for (int64_t& v : values) {
    bits = bits * 6364136223846793005u + 1442695040888963407u;
    v = static_cast<int64_t>(bits);
  }
  values[0] = -1;  // all ones: a NaN as a double
  values[1] = 1;   // a subnormal double
  const st::Tensor copy = transposed(st::tensor(values, {cols, rows})).contiguous();
  const std::vector<int64_t> got = copy.to_vector<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(got[static_cast<size_t>(r * cols + c)], values[static_cast<size_t>(c * rows + r)])
          << r << ", " << c;
    }
  }
}

TEST(ElementwiseSemantics, ToConvertsAndKeepsTheTensorForItsOwnDtype) {
  const st::Tensor x = st::tensor(std::vector<float>{2.7f, -2.7f, 0.0f}, {3});
  EXPECT_EQ(x.to(st::kFloat32).impl(), x.impl());
  EXPECT_EQ(x.to(st::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{2, -2, 0}));
  EXPECT_EQ(x.to(st::kBool).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(x.to(st::kFloat64).dtype(), st::kFloat64);
}

TEST(ElementwiseSemantics, ContiguousCopiesOnlyWhenNeeded) {
  const st::Tensor x = st::tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  EXPECT_EQ(x.contiguous().impl(), x.impl());
  const st::Tensor c = transposed(x).contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{1, 3, 2, 4}));
}

TEST(ElementwiseSemantics, InPlaceOpsReturnSelfAndBumpTheVersion) {
  const st::Tensor x = st::tensor({-1.0, 4.0}, {2});
  const st::Tensor two = st::tensor({2.0}, {});
  uint32_t version = x.version();
  auto expect_in_place = [&](const st::Tensor& returned, std::vector<double> values) {
    EXPECT_EQ(returned.impl(), x.impl());
    EXPECT_EQ(x.version(), ++version);
    EXPECT_EQ(x.to_vector<double>(), values);
  };
  expect_in_place(x.sub_(two), {-3, 2});
  expect_in_place(x.div_(two), {-1.5, 1});
  expect_in_place(x.relu_(), {0, 1});
  expect_in_place(x.clamp_(0.25, 0.5), {0.25, 0.5});
  expect_in_place(x.sub_(two, 0.5), {-0.75, -0.5});
}

TEST(ElementwiseSemantics, NaNPropagates) {
  const st::Tensor x = st::tensor({kNaN, 1.0}, {2});
  const st::Tensor y = st::tensor({0.0, kNaN}, {2});
  for (const st::Tensor& r : {st::maximum(x, y), st::minimum(x, y), st::maximum(y, x)}) {
    const std::vector<double> v = r.to_vector<double>();
    EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
  }
  EXPECT_TRUE(std::isnan(x.relu().to_vector<double>()[0]));
  EXPECT_TRUE(std::isnan(x.clamp(0.0, 0.5).to_vector<double>()[0]));
}

TEST(ElementwiseSemantics, IntegerMathIsExact) {
  // 3^39 and (-2)^39 are not doubles: a floating pow would round them.
  const st::Tensor base = st::tensor(std::vector<int64_t>{3, -2}, {2});
  EXPECT_EQ(base.pow(39).to_vector<int64_t>(),
            (std::vector<int64_t>{4052555153018976267, -549755813888}));
  EXPECT_EQ((base * base).dtype(), st::kInt64);
  const st::Tensor seven = st::tensor(std::vector<int64_t>{7, -7}, {2});
  EXPECT_EQ((seven / 2).dtype(), st::kFloat32);
  EXPECT_EQ((seven / 2).to_vector<double>(), (std::vector<double>{3.5, -3.5}));
  EXPECT_EQ(seven.exp().dtype(), st::kFloat32);
}

TEST(ElementwiseSemantics, LargeStridedAndBroadcastInputsRunInParallel) {
  const int64_t rows = 700, cols = 300;  // 210000 elements: several grains
  const st::Tensor a = transposed_ramp(rows, cols);
  std::vector<float> column_index(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) column_index[static_cast<size_t>(c)] = static_cast<float>(c);
  const st::Tensor b = st::tensor(column_index, {cols});  // broadcast along rows
  const std::vector<float> av = a.to_vector<float>();
  const std::vector<float> sum = (a + b).to_vector<float>();
  const std::vector<float> e = a.exp().to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      ASSERT_EQ(sum[i], av[i] + static_cast<float>(c)) << r << ", " << c;
      ASSERT_NEAR(e[i], std::exp(av[i]), 1e-6 * std::exp(av[i])) << r << ", " << c;
    }
  }
}

TEST(ElementwiseSemantics, ExpandedInputsConvertOnlyTheirDistinctValues) {
  // An Int64 row expanded to [rows, 4] meets a Float32 tensor: the row is converted
  // once and stays broadcast.
  const st::Tensor row = st::tensor(std::vector<int64_t>{1, 2, 3, 4}, {1, 4});
  const st::Tensor expanded(st::make_intrusive<st::TensorImpl>(
      row.impl()->storage(), st::kInt64, st::IntArrayRef({50000, 4}), st::IntArrayRef({0, 1}), 0));
  const st::Tensor f = st::full({50000, 4}, 0.5, st::kFloat32);
  const std::vector<float> sum = (expanded + f).to_vector<float>();
  for (size_t i = 0; i < sum.size(); ++i) ASSERT_EQ(sum[i], static_cast<float>(i % 4 + 1) + 0.5f);
}

// Every in-place unary op writes its op's values into self (a strided view
// included), returns self and bumps its version once.
TEST(InPlaceUnary, WritesTheOpsValuesIntoAViewAndBumpsTheVersion) {
  using Method = const st::Tensor& (st::Tensor::*)() const;
  using Op = st::Tensor (st::Tensor::*)() const;
  const std::pair<Method, Op> pairs[] = {{&st::Tensor::neg_, &st::Tensor::neg},
                                         {&st::Tensor::abs_, &st::Tensor::abs},
                                         {&st::Tensor::sign_, &st::Tensor::sign},
                                         {&st::Tensor::square_, &st::Tensor::square},
                                         {&st::Tensor::relu_, &st::Tensor::relu},
                                         {&st::Tensor::exp_, &st::Tensor::exp},
                                         {&st::Tensor::expm1_, &st::Tensor::expm1},
                                         {&st::Tensor::log_, &st::Tensor::log},
                                         {&st::Tensor::log1p_, &st::Tensor::log1p},
                                         {&st::Tensor::sqrt_, &st::Tensor::sqrt},
                                         {&st::Tensor::rsqrt_, &st::Tensor::rsqrt},
                                         {&st::Tensor::sin_, &st::Tensor::sin},
                                         {&st::Tensor::reciprocal_, &st::Tensor::reciprocal},
                                         {&st::Tensor::cos_, &st::Tensor::cos},
                                         {&st::Tensor::tanh_, &st::Tensor::tanh},
                                         {&st::Tensor::sigmoid_, &st::Tensor::sigmoid},
                                         {&st::Tensor::silu_, &st::Tensor::silu},
                                         {&st::Tensor::floor_, &st::Tensor::floor},
                                         {&st::Tensor::ceil_, &st::Tensor::ceil},
                                         {&st::Tensor::round_, &st::Tensor::round}};
  for (const auto& [in_place, op] : pairs) {
    const st::Tensor base = st::arange(12).to(st::kFloat64).reshape({3, 4}) * 0.25 + 0.5;
    const st::Tensor expected = (transposed(base).*op)();
    const st::Tensor view = transposed(base);
    const uint32_t version = view.version();
    const st::Tensor& returned = (view.*in_place)();
    EXPECT_EQ(returned.impl(), view.impl());
    EXPECT_EQ(view.version(), version + 1);
    EXPECT_EQ(view.to_vector<double>(), expected.to_vector<double>());
  }
}

}  // namespace
