// Tests of the first CPU operators: factories, fill_/zero_/copy_, add and mul.
// add/mul are checked against a naive broadcasting loop written here (strides and
// broadcast shapes computed by the test, not the library), on contiguous and
// non-contiguous inputs, in every dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;

namespace {

using Shape = std::vector<int64_t>;

using strata::testing::error_message;
using strata::testing::expect_contains;

// ---- the naive reference -------------------------------------------------------------

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape row_major_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= sizes[i] == 0 ? 1 : sizes[i];
  }
  return strides;
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// The test's own description of an operand: the values it wrote into a buffer and
// how the tensor views that buffer. `tensor` is the library object built from it.
struct Operand {
  std::vector<double> buffer;
  Shape sizes, strides;
  int64_t offset = 0;
  st::Tensor tensor;

  // Element at `index` (a multi-index over `out_shape`), broadcasting as NumPy does.
  double at(const Shape& index, const Shape& out_shape) const {
    const size_t lead = out_shape.size() - sizes.size();
    int64_t pos = offset;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] != 1) pos += index[d + lead] * strides[d];
    }
    return buffer[static_cast<size_t>(pos)];
  }
};

// out[i] = f(a[i], b[i]) over the broadcast shape, in row-major order, computed in T.
template <class T, class F>
std::vector<T> reference_binary(const Operand& a, const Operand& b, F f) {
  const Shape out_shape = broadcast_shape(a.sizes, b.sizes);
  std::vector<T> out;
  Shape index(out_shape.size(), 0);
  for (int64_t i = 0; i < numel_of(out_shape); ++i) {
    out.push_back(static_cast<T>(
        f(static_cast<T>(a.at(index, out_shape)), static_cast<T>(b.at(index, out_shape)))));
    for (size_t d = out_shape.size(); d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// Compares values (exactly for ints and bools, at 1e-5 for floats) and reports the
// first mismatch and how many there were, so a large tensor cannot flood the log.
template <class T>
void expect_values(const st::Tensor& out, const std::vector<T>& expected) {
  const std::vector<T> got = out.to_vector<T>();
  ASSERT_EQ(got.size(), expected.size());
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::is_floating_point_v<T>
                        ? std::abs(double(got[i]) - double(expected[i])) <=
                              1e-5 + 1e-5 * std::abs(double(expected[i]))
                        : got[i] == expected[i];
    if (!ok && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << "first mismatch at element " << first << ": got " << got[first]
                            << ", expected " << expected[first];
}

// Checks the dtype, shape and row-major values of t.
template <class T>
void expect_tensor(const st::Tensor& t, st::ScalarType dtype, const Shape& shape,
                   const std::vector<T>& values) {
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.sizes().vec(), shape);
  expect_values(t, values);
}

// ---- building operands in several layouts ---------------------------------------------

enum class Layout { Contiguous, Transposed, Sliced, Expanded };
const Layout kLayouts[] = {Layout::Contiguous, Layout::Transposed, Layout::Sliced,
                           Layout::Expanded};
const char* name(Layout l) {
  static const char* const names[] = {"contiguous", "transposed", "sliced", "expanded"};
  return names[static_cast<int>(l)];
}

// Deterministic, exactly representable values of each dtype; `seed` varies operands.
double value_for(st::ScalarType dtype, int64_t i, int seed) {
  switch (dtype) {
    case st::ScalarType::Bool: return (i + seed) % 3 != 0 ? 1.0 : 0.0;
    case st::ScalarType::Int64: return static_cast<double>((i * 7 + seed * 3) % 11 - 5);
    default: return static_cast<double>((i * 5 + seed) % 13) * 0.25 - 1.5;
  }
}

st::Tensor view(const st::Tensor& base, st::IntArrayRef sizes, st::IntArrayRef strides,
                int64_t offset) {
  return st::Tensor(st::make_intrusive<st::TensorImpl>(base.impl()->storage(), base.dtype(), sizes,
                                                       strides, offset));
}

template <class T>
void write_values(const st::Tensor& contiguous, const std::vector<double>& values) {
  T* data = contiguous.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<T>(values[i]);
}

// An operand of logical shape `sizes` whose buffer is laid out as `layout` says:
// Transposed reverses the dims of a contiguous base, Sliced takes every other element
// of a bigger base starting at (1, 1, ...), Expanded repeats the last dim (stride 0).
Operand make_operand(const Shape& sizes, st::ScalarType dtype, Layout layout, int seed) {
  Operand op;
  op.sizes = sizes;
  const size_t rank = sizes.size();
  Shape base_sizes = sizes;
  if (layout == Layout::Transposed) {
    base_sizes.assign(sizes.rbegin(), sizes.rend());
    Shape base_strides = row_major_strides(base_sizes);
    op.strides.assign(base_strides.rbegin(), base_strides.rend());
  } else if (layout == Layout::Sliced) {
    for (size_t d = 0; d < rank; ++d) base_sizes[d] = 2 * sizes[d] + 1;
    Shape base_strides = row_major_strides(base_sizes);
    op.strides.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      op.strides[d] = 2 * base_strides[d];
      op.offset += base_strides[d];
    }
  } else if (layout == Layout::Expanded && rank > 0) {
    base_sizes = {sizes.back()};
    op.strides.assign(rank, 0);
    op.strides.back() = 1;
  } else {
    op.strides = row_major_strides(sizes);
  }
  const int64_t buffer_size = numel_of(base_sizes);
  for (int64_t i = 0; i < buffer_size; ++i) op.buffer.push_back(value_for(dtype, i, seed));

  st::Tensor base = st::empty(base_sizes, dtype);
  switch (dtype) {
    case st::ScalarType::Bool: write_values<bool>(base, op.buffer); break;
    case st::ScalarType::Int64: write_values<int64_t>(base, op.buffer); break;
    case st::ScalarType::Float32: write_values<float>(base, op.buffer); break;
    case st::ScalarType::Float64: write_values<double>(base, op.buffer); break;
  }
  op.tensor = view(base, op.sizes, op.strides, op.offset);
  return op;
}

struct BroadcastCase {
  Shape a, b;
};
const BroadcastCase kBroadcastCases[] = {
    {{2, 3}, {2, 3}},       {{}, {2, 3}},       {{2, 3}, {}},     {{3, 1}, {1, 4}},
    {{2, 3, 4}, {4}},       {{1, 3, 1}, {2, 1, 5}}, {{0, 3}, {3}}, {{}, {}},
    {{4, 1, 3}, {1, 2, 1}},
};

// Runs `check` for every broadcast case and every pair of layouts.
void for_each_case(st::ScalarType dtype,
                   const std::function<void(const Operand&, const Operand&)>& check) {
  for (const BroadcastCase& c : kBroadcastCases) {
    for (Layout la : kLayouts) {
      for (Layout lb : kLayouts) {
        SCOPED_TRACE(::testing::Message()
                     << dtype << " a=" << st::shape_string(c.a) << " (" << name(la) << ") b="
                     << st::shape_string(c.b) << " (" << name(lb) << ")");
        check(make_operand(c.a, dtype, la, 1), make_operand(c.b, dtype, lb, 2));
      }
    }
  }
}

template <class T>
void check_add_and_mul(st::ScalarType dtype) {
  for_each_case(dtype, [](const Operand& a, const Operand& b) {
    const Shape out_shape = broadcast_shape(a.sizes, b.sizes);
    st::Tensor sum = st::add(a.tensor, b.tensor);
    EXPECT_EQ(sum.sizes().vec(), out_shape);
    EXPECT_EQ(sum.dtype(), a.tensor.dtype());
    expect_values(sum, reference_binary<T>(a, b, [](T x, T y) { return x + y; }));
    expect_values(a.tensor + b.tensor, reference_binary<T>(a, b, [](T x, T y) { return x + y; }));
    expect_values(st::add(a.tensor, b.tensor, 2),
                  reference_binary<T>(a, b, [](T x, T y) { return x + T(2) * y; }));
    expect_values(st::add(a.tensor, b.tensor, -1),
                  reference_binary<T>(a, b, [](T x, T y) { return x - y; }));
    st::Tensor product = a.tensor * b.tensor;
    EXPECT_EQ(product.sizes().vec(), out_shape);
    expect_values(product, reference_binary<T>(a, b, [](T x, T y) { return x * y; }));
  });
}

// ---- add / mul against the reference ---------------------------------------------

TEST(BinaryOps, TestLayoutsAreWhatTheySay) {
  for (Layout layout : {Layout::Transposed, Layout::Sliced, Layout::Expanded}) {
    Operand op = make_operand({2, 3}, st::kFloat32, layout, 0);
    EXPECT_FALSE(op.tensor.is_contiguous()) << name(layout);
    EXPECT_EQ(op.tensor.sizes().vec(), (Shape{2, 3}));
  }
  EXPECT_EQ(make_operand({2, 3}, st::kFloat32, Layout::Sliced, 0).tensor.storage_offset(), 8);
  EXPECT_EQ(make_operand({2, 3}, st::kFloat32, Layout::Expanded, 0).tensor.stride(0), 0);
}

TEST(BinaryOps, Float32MatchesReference) { check_add_and_mul<float>(st::kFloat32); }
TEST(BinaryOps, Float64MatchesReference) { check_add_and_mul<double>(st::kFloat64); }
TEST(BinaryOps, Int64MatchesReference) { check_add_and_mul<int64_t>(st::kInt64); }

TEST(BinaryOps, BoolMulIsLogicalAnd) {
  for_each_case(st::kBool, [](const Operand& a, const Operand& b) {
    st::Tensor product = st::mul(a.tensor, b.tensor);
    EXPECT_EQ(product.dtype(), st::kBool);
    expect_values(product, reference_binary<bool>(a, b, [](bool x, bool y) { return x && y; }));
  });
}

TEST(BinaryOps, LargeTensorsTakeTheParallelPath) {
  // 613 * 491 = 300983 elements, above the elementwise grain; rows are odd-sized
  // so chunks start in the middle of rows.
  const Shape shape = {613, 491};
  Operand a = make_operand(shape, st::kFloat32, Layout::Contiguous, 1);
  Operand b = make_operand(shape, st::kFloat32, Layout::Contiguous, 2);
  expect_values(st::add(a.tensor, b.tensor),
                reference_binary<float>(a, b, [](float x, float y) { return x + y; }));

  Operand t = make_operand(shape, st::kFloat64, Layout::Transposed, 3);
  Operand col = make_operand({613, 1}, st::kFloat64, Layout::Contiguous, 4);
  Operand row = make_operand({491}, st::kFloat64, Layout::Sliced, 5);
  expect_values(st::add(t.tensor, col.tensor, 2),
                reference_binary<double>(t, col, [](double x, double y) { return x + 2 * y; }));
  expect_values(st::mul(row.tensor, t.tensor),
                reference_binary<double>(row, t, [](double x, double y) { return x * y; }));

  Operand e = make_operand(shape, st::kInt64, Layout::Expanded, 6);
  Operand s = make_operand(shape, st::kInt64, Layout::Sliced, 7);
  expect_values(st::mul(e.tensor, s.tensor),
                reference_binary<int64_t>(e, s, [](int64_t x, int64_t y) { return x * y; }));
}

TEST(BinaryOps, LargeTensorsUnderOneThreadRunInline) {
  // With one thread set, parallel_for runs the whole range in one call: the
  // strided driver then starts mid-row nowhere but must still cover every row.
  struct OneThread {
    OneThread() { st::cpu::set_num_threads(1); }
    ~OneThread() { st::cpu::set_num_threads(0); }
  } one_thread;
  const Shape shape = {613, 491};
  Operand t = make_operand(shape, st::kFloat32, Layout::Transposed, 8);
  Operand col = make_operand({613, 1}, st::kFloat32, Layout::Contiguous, 9);
  expect_values(st::sub(t.tensor, col.tensor),
                reference_binary<float>(t, col, [](float x, float y) { return x - y; }));
}

// ---- type promotion ------------------------------------------------------------------

TEST(BinaryOps, TypePromotion) {
  st::Tensor i64 = st::tensor(std::vector<int64_t>{1, 2});
  st::Tensor f32 = st::tensor(std::vector<float>{0.5f, 0.25f});
  st::Tensor f64 = st::tensor({0.125, 4.0});
  st::Tensor b = st::tensor(std::vector<bool>{true, false});

  expect_tensor(i64 + f32, st::kFloat32, {2}, std::vector<float>{1.5f, 2.25f});
  expect_tensor(f32 * f64, st::kFloat64, {2}, std::vector<double>{0.0625, 1.0});
  expect_tensor(b + i64, st::kInt64, {2}, std::vector<int64_t>{2, 2});

  // A 0-dim tensor of a higher category decides; of the same category it does not.
  st::Tensor zero_dim_f64 = st::tensor({2.5}, {});
  expect_tensor(zero_dim_f64 + i64, st::kFloat64, {2}, std::vector<double>{3.5, 4.5});
  expect_tensor(f32 * zero_dim_f64, st::kFloat32, {2}, std::vector<float>{1.25f, 0.625f});
  expect_tensor(b * st::tensor(std::vector<int64_t>{3}, {}), st::kInt64, {2},
                std::vector<int64_t>{3, 0});
  EXPECT_EQ((st::tensor(std::vector<bool>{true}, {}) + i64).dtype(), st::kInt64);
  // Two 0-dim tensors promote as usual.
  EXPECT_EQ((zero_dim_f64 + st::tensor(std::vector<float>{1.0f}, {})).dtype(), st::kFloat64);
}

TEST(BinaryOps, FloatAlphaWithIntegerTensorsThrows) {
  st::Tensor i = st::tensor(std::vector<int64_t>{1, 2});
  expect_contains(error_message([&] { st::add(i, i, 2.5); }), {"alpha", "Int64"});
  expect_contains(error_message([&] { i.add_(i, 0.5); }), {"alpha"});
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  st::Tensor f = st::tensor({1.0, 2.0});
  EXPECT_EQ(st::add(f, f, 0.5).to_vector<double>(), (std::vector<double>{1.5, 3.0}));
}

TEST(BinaryOps, ShapeMismatchNamesBothShapes) {
  st::Tensor a = st::zeros({2, 3});
  st::Tensor b = st::zeros({4});
  expect_contains(error_message([&] { st::add(a, b); }), {"add", "[2, 3]", "[4]"});
  expect_contains(error_message([&] { a * b; }), {"mul", "[2, 3]", "[4]"});
}

// ---- in-place ------------------------------------------------------------------------

TEST(InPlaceOps, WriteIntoSelfWithBroadcastAndBumpVersion) {
  Operand self = make_operand({2, 3}, st::kFloat64, Layout::Contiguous, 1);
  Operand other = make_operand({3}, st::kFloat64, Layout::Sliced, 2);
  const uint32_t v0 = self.tensor.version();
  const st::Tensor& returned = self.tensor.add_(other.tensor, 2);
  EXPECT_EQ(returned.impl(), self.tensor.impl());
  EXPECT_EQ(self.tensor.version(), v0 + 1);
  expect_values(self.tensor,
                reference_binary<double>(self, other, [](double x, double y) { return x + 2 * y; }));

  Operand col = make_operand({2, 1}, st::kFloat64, Layout::Contiguous, 3);
  std::vector<double> expected = self.tensor.to_vector<double>();
  for (size_t i = 0; i < expected.size(); ++i) expected[i] *= col.buffer[i / 3];
  self.tensor.mul_(col.tensor);
  EXPECT_EQ(self.tensor.version(), v0 + 2);
  expect_values(self.tensor, expected);
}

TEST(InPlaceOps, OnANonContiguousViewTouchesOnlyTheView) {
  // self: every other element of a [5, 7] base (a Sliced [2, 3] view).
  Operand self = make_operand({2, 3}, st::kInt64, Layout::Sliced, 1);
  Operand other = make_operand({2, 3}, st::kInt64, Layout::Transposed, 2);
  std::vector<int64_t> expected_view =
      reference_binary<int64_t>(self, other, [](int64_t x, int64_t y) { return x + y; });
  self.tensor.add_(other.tensor);
  expect_values(self.tensor, expected_view);
  // Elements of the base outside the view keep their values.
  const int64_t* base = static_cast<const int64_t*>(self.tensor.impl()->storage()->data());
  for (int64_t i = 0; i < 35; ++i) {
    const bool in_view = (i / 7) % 2 == 1 && (i % 7) % 2 == 1;  // rows 1, 3; columns 1, 3, 5
    if (!in_view) {
      EXPECT_EQ(base[i], static_cast<int64_t>(self.buffer[i])) << "base element " << i;
    }
  }
}

TEST(InPlaceOps, BroadcastBiggerThanSelfThrows) {
  st::Tensor self = st::zeros({3});
  st::Tensor other = st::ones({2, 3});
  const uint32_t v0 = self.version();
  expect_contains(error_message([&] { self.add_(other); }), {"[3]", "[2, 3]"});
  expect_contains(error_message([&] { self.mul_(other); }), {"[3]", "[2, 3]"});
  EXPECT_EQ(self.version(), v0);
  EXPECT_EQ(self.to_vector<float>(), (std::vector<float>{0, 0, 0}));
}

TEST(InPlaceOps, ResultDtypeMustFitSelf) {
  st::Tensor i = st::tensor(std::vector<int64_t>{1, 2});
  st::Tensor f = st::tensor(std::vector<float>{0.5f, 0.5f});
  expect_contains(error_message([&] { i.add_(f); }), {"Float32", "Int64"});
  expect_contains(error_message([&] { i.mul_(st::tensor({2.0}, {})); }), {"Float64", "Int64"});
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  // The other way round the other operand is converted.
  f.add_(i);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, 2.5f}));
  // Same category: a 0-dim Float64 other leaves a Float32 self's dtype alone.
  expect_tensor(f.mul_(st::tensor({2.0}, {})), st::kFloat32, {2}, std::vector<float>{3.0f, 5.0f});
}

// ---- fill_ / zero_ / copy_ -------------------------------------------------------------

TEST(FillOps, FillOnAStridedViewFillsOnlyTheView) {
  st::Tensor base = st::zeros({3, 4});
  st::Tensor odd_columns = view(base, {3, 2}, {4, 2}, 1);
  const uint32_t v0 = base.version();
  odd_columns.fill_(7.5);
  EXPECT_EQ(base.version(), v0 + 1);
  EXPECT_EQ(base.to_vector<float>(),
            (std::vector<float>{0, 7.5, 0, 7.5, 0, 7.5, 0, 7.5, 0, 7.5, 0, 7.5}));
  odd_columns.zero_();
  EXPECT_EQ(base.to_vector<float>(), std::vector<float>(12, 0.0f));
  EXPECT_EQ(base.version(), v0 + 2);
}

TEST(FillOps, FillChecksTheValueKind) {
  st::Tensor i = st::zeros({2}, st::kInt64);
  expect_contains(error_message([&] { i.fill_(1.5); }), {"Int64", "1.5"});
  expect_tensor(i.fill_(3), st::kInt64, {2}, std::vector<int64_t>{3, 3});
  expect_tensor(st::zeros({2}, st::kBool).fill_(true), st::kBool, {2}, std::vector<bool>{true, true});
  st::Tensor f = st::zeros({}, st::kFloat64);
  expect_tensor(f.fill_(2), st::kFloat64, {}, std::vector<double>{2.0});
  expect_tensor(f.zero_(), st::kFloat64, {}, std::vector<double>{0.0});
}

TEST(CopyOps, ConvertsDtypes) {
  expect_tensor(st::zeros({4}, st::kInt64).copy_(st::tensor({1.7, -1.7, 2.5, -0.5})), st::kInt64,
                {4}, std::vector<int64_t>{1, -1, 2, 0});

  st::Tensor to_float = st::zeros({3}, st::kFloat32);
  const uint32_t v0 = to_float.version();
  to_float.copy_(st::tensor(std::vector<int64_t>{-3, 0, 1 << 20}));
  EXPECT_EQ(to_float.to_vector<float>(), (std::vector<float>{-3.0f, 0.0f, 1048576.0f}));
  EXPECT_EQ(to_float.version(), v0 + 1);

  expect_tensor(st::zeros({3}, st::kBool).copy_(st::tensor({0.0, 0.5, -2.0})), st::kBool, {3},
                std::vector<bool>{false, true, true});
}

TEST(CopyOps, BroadcastsSrcAndRejectsBadShapes) {
  st::Tensor dst = st::zeros({2, 3}, st::kFloat64);
  dst.copy_(st::tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(dst.to_vector<double>(), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  // Into a transposed view: dst^T[i][j] = src[i][j] means dst[j][i] = src[i][j].
  view(dst, {3, 2}, {1, 3}, 0).copy_(st::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {3, 2}));
  EXPECT_EQ(dst.to_vector<double>(), (std::vector<double>{1, 3, 5, 2, 4, 6}));

  expect_contains(error_message([&] { dst.copy_(st::zeros({4})); }), {"[2, 3]", "[4]"});
  expect_contains(error_message([&] { st::zeros({3}).copy_(dst); }), {"[3]", "[2, 3]"});
}

// ---- factories ---------------------------------------------------------------------------

TEST(Factories, DefaultDtypesAndValues) {
  expect_tensor(st::zeros({2, 3}), st::kFloat32, {2, 3}, std::vector<float>(6, 0.0f));
  expect_tensor(st::ones({4}), st::kFloat32, {4}, std::vector<float>(4, 1.0f));
  EXPECT_EQ(st::empty({2}).dtype(), st::kFloat32);
  expect_tensor(st::full({2, 2}, 1.5), st::kFloat32, {2, 2}, std::vector<float>(4, 1.5f));
  expect_tensor(st::full({3}, 7), st::kInt64, {3}, std::vector<int64_t>{7, 7, 7});
  expect_tensor(st::full({2}, true), st::kBool, {2}, std::vector<bool>{true, true});
}

TEST(Factories, ExplicitDtypeAndOddShapes) {
  expect_tensor(st::zeros({2}, st::kInt64), st::kInt64, {2}, std::vector<int64_t>{0, 0});
  expect_tensor(st::ones({2}, st::kFloat64), st::kFloat64, {2}, std::vector<double>{1, 1});
  expect_tensor(st::ones({3}, st::kBool), st::kBool, {3}, std::vector<bool>{true, true, true});
  expect_tensor(st::full({2}, 7, st::kFloat64), st::kFloat64, {2}, std::vector<double>{7, 7});
  expect_tensor(st::full({}, -2.5), st::kFloat32, {}, std::vector<float>{-2.5f});
  expect_tensor(st::ones({0, 3}), st::kFloat32, {0, 3}, std::vector<float>{});
}

TEST(Factories, NegativeSizeThrows) {
  expect_contains(error_message([] { st::empty({2, -1}); }), {"-1", "[2, -1]"});
  expect_contains(error_message([] { st::zeros({-3}); }), {"-3"});
  expect_contains(error_message([] { st::full({-1, 2}, 1.0); }), {"-1"});
}

}  // namespace
