// Shape and indexing ops beyond the op table: bad input throws a strata::Error that
// names the op and what was wrong; views share their base's storage, so writes
// show through; reshape copies only when no view exists; in-place indexing ops
// write into self.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;

namespace {

using strata::testing::error_message;
using strata::testing::expect_contains;

// Float64 values 0, 1, 2, ... in row-major order.
st::Tensor iota(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i);
  return st::tensor(values, sizes);
}

st::Tensor indices(const std::vector<int64_t>& values) {
  return st::tensor(values, {static_cast<int64_t>(values.size())});
}

// ---- views: errors ---------------------------------------------------------------

TEST(ShapeErrors, ViewOfIncompatibleStridesNamesSizesAndStrides) {
  const st::Tensor x = iota({3, 4}).t();  // sizes [4, 3], strides [1, 4]
  expect_contains(error_message([&] { x.view({12}); }),
                  {"[strata::view]", "[12]", "sizes [4, 3]", "strides [1, 4]", "reshape"});
  const st::Tensor sliced = iota({3, 8}).slice(1, 0, 4);  // sizes [3, 4], strides [8, 1]
  expect_contains(error_message([&] {
                    sliced.view({2, 6});
                  }),
                  {"[strata::view]", "[2, 6]", "[3, 4]", "[8, 1]"});
}

TEST(ShapeErrors, ReshapeToAnotherNumberOfElementsNamesBothShapes) {
  const st::Tensor x = iota({2, 3});
  expect_contains(error_message([&] {
                    x.reshape({4, 2});
                  }),
                  {"[strata::reshape]", "[4, 2]", "8 elements", "[2, 3]", "6 elements"});
  expect_contains(error_message([&] {
                    x.view({4, -1});
                  }),
                  {"[strata::view]", "[4, -1]", "[2, 3]", "6 elements"});
  expect_contains(error_message([&] {
                    x.reshape({-1, -1});
                  }),
                  {"[strata::reshape]", "only one dim can be -1"});
  expect_contains(error_message([&] {
                    st::zeros({0, 3}).reshape({0, -1});
                  }),
                  {"[strata::reshape]", "cannot infer the -1", "[0, -1]"});
  expect_contains(error_message([&] {
                    x.unflatten(1, {2, 2});
                  }),
                  {"[strata::unflatten]", "[2, 2]", "3 elements"});
}

TEST(ShapeErrors, DimOutOfRangeNamesOpDimAndRank) {
  const st::Tensor x = iota({2, 3});
  const st::Tensor index = indices({0});
  struct Case {
    const char* op;
    const char* dim;
    std::function<void()> call;
  };
  const std::vector<Case> cases{
      {"[strata::transpose]", "dim 2", [&] { x.transpose(0, 2); }},
      {"[strata::permute]", "dim -3",
       [&] {
         x.permute({1, -3});
       }},
      {"[strata::squeeze]", "dim 5", [&] { x.squeeze(5); }},
      {"[strata::select]", "dim 2", [&] { x.select(2, 0); }},
      {"[strata::slice]", "dim -3", [&] { x.slice(-3); }},
      {"[strata::narrow]", "dim 2", [&] { x.narrow(2, 0, 1); }},
      {"[strata::flatten]", "dim 2", [&] { x.flatten(0, 2); }},
      {"[strata::unflatten]", "dim 2",
       [&] {
         x.unflatten(2, {1, 3});
       }},
      {"[strata::diagonal]", "dim 2", [&] { x.diagonal(0, 0, 2); }},
      {"[strata::movedim]", "dim 2", [&] { x.movedim(2, 0); }},
      {"[strata::split]", "dim 2", [&] { x.split(1, 2); }},
      {"[strata::chunk]", "dim -3", [&] { x.chunk(2, -3); }},
      {"[strata::unbind]", "dim 2", [&] { x.unbind(2); }},
      {"[strata::cat]", "dim 2",
       [&] {
         st::cat({x, x}, 2);
       }},
      {"[strata::index_select]", "dim 2", [&] { x.index_select(2, index); }},
      {"[strata::gather]", "dim -3", [&] { x.gather(-3, index.unsqueeze(0)); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    expect_contains(error_message(c.call), {c.op, c.dim, "rank 2"});
  }
  // Ops that insert a dim accept [-rank - 1, rank].
  expect_contains(error_message([&] { x.unsqueeze(3); }),
                  {"[strata::unsqueeze]", "dim 3", "rank 2", "[-3, 2]"});
  expect_contains(error_message([&] {
                    st::stack({x, x}, -4);
                  }),
                  {"[strata::stack]", "dim -4", "rank 2", "[-3, 2]"});
  expect_contains(error_message([&] { st::tensor({1.0}, {}).select(0, 0); }),
                  {"[strata::select]", "dim 0", "rank 0"});
}

TEST(ShapeErrors, ExpandToAnIncompatibleSize) {
  const st::Tensor x = iota({3, 2});
  expect_contains(error_message([&] {
                    x.expand({3, 4});
                  }),
                  {"[strata::expand]", "size 2", "dim 1", "[3, 2]", "expanded to 4", "[3, 4]"});
  expect_contains(error_message([&] { x.expand({6}); }),
                  {"[strata::expand]", "fewer dims", "[6]", "[3, 2]"});
  expect_contains(error_message([&] {
                    x.expand({-1, 3, 2});
                  }),
                  {"[strata::expand]", "new leading dim", "-1"});
}

TEST(ShapeErrors, SelectNarrowAndSliceOutOfRange) {
  const st::Tensor x = iota({3, 4});
  expect_contains(error_message([&] { x.select(1, 4); }),
                  {"[strata::select]", "index 4", "dim 1", "size 4"});
  expect_contains(error_message([&] { x.select(0, -4); }),
                  {"[strata::select]", "index -4", "size 3"});
  expect_contains(error_message([&] { x.narrow(1, 2, 3); }),
                  {"[strata::narrow]", "start (2) + length (3)", "size 4"});
  expect_contains(error_message([&] { x.slice(0, 0, 2, 0); }),
                  {"[strata::slice]", "step must be positive", "0"});
}

TEST(ShapeErrors, OtherViewArguments) {
  const st::Tensor x = iota({2, 3, 4});
  expect_contains(error_message([&] {
                    x.permute({0, 1});
                  }),
                  {"[strata::permute]", "2 dims", "rank 3"});
  expect_contains(error_message([&] {
                    x.permute({0, 1, -3});
                  }),
                  {"[strata::permute]", "dim -3 appears twice"});
  expect_contains(error_message([&] { x.t(); }), {"[strata::t]", "at most 2 dims", "[2, 3, 4]"});
  expect_contains(error_message([&] { x.diagonal(0, 1, -2); }), {"[strata::diagonal]", "same dim"});
  expect_contains(error_message([&] {
                    x.as_strided({5, 5}, {5, 1});
                  }),
                  {"[strata::as_strided]", "reach element 24", "storage of 24 elements"});
  expect_contains(error_message([&] {
                    x.as_strided({2}, {1, 1});
                  }),
                  {"[strata::as_strided]", "1 sizes", "2 strides"});
  expect_contains(error_message([&] { x.split(0, 1); }), {"[strata::split]", "split_size"});
  expect_contains(error_message([&] { x.chunk(0); }),
                  {"[strata::chunk]", "chunks must be positive"});
}

// ---- joins: errors ---------------------------------------------------------------

TEST(ShapeErrors, CatOfMismatchedShapesNamesPositionsAndShapes) {
  const st::Tensor a = iota({2, 3}), b = iota({2, 4});
  expect_contains(error_message([&] {
                    st::cat({a, a, b}, 0);
                  }),
                  {"[strata::cat]", "position 2", "[2, 4]", "position 0", "[2, 3]", "dim 0"});
  expect_contains(error_message([&] {
                    st::cat({a, iota({3})}, 0);
                  }),
                  {"[strata::cat]", "position 1", "[3]", "[2, 3]"});
  expect_contains(error_message([&] { st::cat(std::vector<st::Tensor>{}, 0); }),
                  {"[strata::cat]", "non-empty list"});
  expect_contains(error_message([&] {
                    st::cat({a, st::tensor({1.0}, {})}, 0);
                  }),
                  {"[strata::cat]", "0-dim", "position 1"});
}

TEST(ShapeErrors, StackOfUnequalShapes) {
  expect_contains(error_message([&] {
                    st::stack({iota({2, 3}), iota({3, 2})}, 0);
                  }),
                  {"[strata::stack]", "position 0", "[2, 3]", "position 1", "[3, 2]"});
  expect_contains(error_message([&] { st::stack(std::vector<st::Tensor>{}, 0); }),
                  {"[strata::stack]", "non-empty list"});
}

// ---- indexing: errors ------------------------------------------------------------

TEST(IndexingErrors, IndexMustBeInt64) {
  const st::Tensor x = iota({3, 4});
  const st::Tensor float_index = st::tensor(std::vector<float>{0, 1}, {2});
  expect_contains(error_message([&] { x.index_select(0, float_index); }),
                  {"[strata::index_select]", "Int64", "Float32"});
  expect_contains(error_message([&] { x.gather(0, float_index.unsqueeze(0)); }),
                  {"[strata::gather]", "Int64", "Float32"});
  expect_contains(error_message([&] { x.scatter_add(0, float_index.unsqueeze(0), x); }),
                  {"[strata::scatter_add]", "Int64", "Float32"});
  expect_contains(error_message([&] { x.index_add(0, float_index, x.narrow(0, 0, 2)); }),
                  {"[strata::index_add]", "Int64", "Float32"});
}

TEST(IndexingErrors, OutOfRangeIndexNamesTheValueAndTheSize) {
  const st::Tensor x = iota({3, 4});
  expect_contains(error_message([&] {
                    x.index_select(0, indices({0, 5}));
                  }),
                  {"[strata::index_select]", "index 5", "dim 0", "size 3"});
  expect_contains(error_message([&] { x.index_select(1, indices({-1})); }),
                  {"[strata::index_select]", "index -1", "dim 1", "size 4"});
  expect_contains(error_message([&] {
                    st::zeros({0, 3}).index_select(1, indices({3}));
                  }),
                  {"[strata::index_select]", "index 3", "dim 1", "size 3"});
  const st::Tensor big = st::tensor(std::vector<int64_t>{0, 1, 7, 2}, {2, 2});
  expect_contains(error_message([&] { x.gather(1, big); }),
                  {"[strata::gather]", "index 7", "dim 1", "size 4"});
  expect_contains(error_message([&] { x.scatter_add(0, big, x); }),
                  {"[strata::scatter_add]", "index 7", "dim 0", "size 3"});
  expect_contains(error_message([&] { x.index_add(1, indices({4}), x.narrow(1, 0, 1)); }),
                  {"[strata::index_add]", "index 4", "dim 1", "size 4"});
}

TEST(IndexingErrors, OutOfRangeIndexInALargeTensorIsReportedFromTheWorkerThreads) {
  const st::Tensor x = iota({300, 200});
  std::vector<int64_t> values(300 * 200, 1);
  values[299 * 200 + 150] = 200;
  const st::Tensor index = st::tensor(values, {300, 200});
  expect_contains(error_message([&] { x.gather(1, index); }),
                  {"[strata::gather]", "index 200", "dim 1", "size 200"});
  expect_contains(error_message([&] { x.scatter_add_(1, index, x); }),
                  {"[strata::scatter_add_]", "index 200", "dim 1", "size 200"});
  EXPECT_EQ(x.to_vector<double>(), iota({300, 200}).to_vector<double>());
}

TEST(IndexingErrors, FailedInPlaceScatterLeavesSelfUnchanged) {
  const st::Tensor x = iota({3, 4});
  const uint32_t version = x.version();
  const st::Tensor index = st::tensor(std::vector<int64_t>{0, 1, 2, 9}, {1, 4});
  error_message([&] { x.scatter_add_(0, index, st::ones({1, 4}, st::kFloat64)); });
  error_message([&] { x.index_add_(0, indices({1, 3}), st::ones({2, 4}, st::kFloat64)); });
  EXPECT_EQ(x.to_vector<double>(), iota({3, 4}).to_vector<double>());
  EXPECT_EQ(x.version(), version);
}

TEST(IndexingErrors, ShapeAndDtypeMismatches) {
  const st::Tensor x = iota({3, 4});
  expect_contains(error_message([&] { x.gather(0, indices({0})); }),
                  {"[strata::gather]", "[1]", "as many dims", "[3, 4]"});
  expect_contains(error_message([&] {
                    x.gather(0, st::zeros({2, 5}, st::kInt64));
                  }),
                  {"[strata::gather]", "[2, 5]", "larger than self", "dim 1"});
  expect_contains(error_message([&] {
                    x.scatter_add(0, st::zeros({2, 4}, st::kInt64), st::ones({2, 4}));
                  }),
                  {"[strata::scatter_add]", "src has dtype Float32", "Float64"});
  expect_contains(error_message([&] {
                    x.scatter_add(0, st::zeros({2, 4}, st::kInt64), st::ones({1, 4}, st::kFloat64));
                  }),
                  {"[strata::scatter_add]", "larger than src", "[1, 4]"});
  expect_contains(error_message([&] {
                    x.index_add(0, indices({0, 1}), iota({3, 4}));
                  }),
                  {"[strata::index_add]", "source of shape [3, 4]", "number of indices (2)"});
  expect_contains(error_message([&] {
                    x.index_select(0, st::zeros({1, 1}, st::kInt64));
                  }),
                  {"[strata::index_select]", "0-dim or 1-D", "[1, 1]"});
  const st::Tensor ints = st::zeros({3}, st::kInt64);
  expect_contains(
      error_message([&] { ints.index_add(0, indices({0}), ints.narrow(0, 0, 1), 0.5); }),
      {"[strata::index_add]", "alpha 0.5", "Int64"});
}

TEST(IndexingErrors, MaskedFillNeedsABoolMask) {
  const st::Tensor x = iota({3, 4});
  expect_contains(error_message([&] {
                    x.masked_fill(st::ones({3, 4}), 0.0);
                  }),
                  {"[strata::masked_fill]", "Bool", "Float32"});
  expect_contains(error_message([&] {
                    x.masked_fill_(st::zeros({3, 4}, st::kInt64), 0.0);
                  }),
                  {"[strata::masked_fill_]", "Bool", "Int64"});
  expect_contains(error_message([&] {
                    x.masked_fill_(st::zeros({2, 3, 4}, st::kBool), 0.0);
                  }),
                  {"[strata::masked_fill_]", "[2, 3, 4]", "cannot be broadcast", "[3, 4]"});
  expect_contains(error_message([&] {
                    st::zeros({2}, st::kInt64).masked_fill(st::zeros({2}, st::kBool), 1.5);
                  }),
                  {"[strata::masked_fill]", "Int64", "1.5"});
}

// ---- views: semantics ------------------------------------------------------------

size_t count_of(const st::Tensor& t, double value) {
  const std::vector<double> values = t.to_vector<double>();
  return static_cast<size_t>(std::count(values.begin(), values.end(), value));
}

TEST(ViewSemantics, ViewsShareStorageAndWritesShowThrough) {
  struct Case {
    const char* name;
    std::function<st::Tensor(const st::Tensor&)> make;
    size_t elements_written;  // distinct elements of the base the view covers
  };
  const std::vector<Case> cases{
      {"view",
       [](const st::Tensor& b) {
         return b.view({6, 4});
       },
       24},
      {"reshape",
       [](const st::Tensor& b) {
         return b.reshape({4, -1});
       },
       24},
      {"permute",
       [](const st::Tensor& b) {
         return b.permute({2, 0, 1});
       },
       24},
      {"transpose", [](const st::Tensor& b) { return b.transpose(0, 2); }, 24},
      {"movedim", [](const st::Tensor& b) { return b.movedim(0, -1); }, 24},
      {"unsqueeze", [](const st::Tensor& b) { return b.unsqueeze(1); }, 24},
      {"squeeze", [](const st::Tensor& b) { return b.narrow(1, 1, 1).squeeze(); }, 8},
      {"squeeze(dim)", [](const st::Tensor& b) { return b.narrow(0, 1, 1).squeeze(0); }, 12},
      {"expand",
       [](const st::Tensor& b) {
         return b.narrow(2, 0, 1).expand({5, 2, 3, 7});
       },
       6},
      {"select", [](const st::Tensor& b) { return b.select(2, -1); }, 6},
      {"narrow", [](const st::Tensor& b) { return b.narrow(1, 1, 2); }, 16},
      {"slice", [](const st::Tensor& b) { return b.slice(2, 1, std::nullopt, 2); }, 12},
      {"flatten", [](const st::Tensor& b) { return b.flatten(1); }, 24},
      {"unflatten",
       [](const st::Tensor& b) {
         return b.unflatten(2, {2, 2});
       },
       24},
      {"diagonal", [](const st::Tensor& b) { return b.diagonal(1, 1, 2); }, 6},
      {"as_strided",
       [](const st::Tensor& b) {
         return b.as_strided({3, 3}, {1, 1}, 2);
       },
       5},
      {"t", [](const st::Tensor& b) { return b.select(0, 1).t(); }, 12},
      {"split", [](const st::Tensor& b) { return b.split(3, 2)[1]; }, 6},
      {"chunk", [](const st::Tensor& b) { return b.chunk(2, 1)[0]; }, 16},
      {"unbind", [](const st::Tensor& b) { return b.unbind(1)[2]; }, 8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const st::Tensor base = iota({2, 3, 4});
    const st::Tensor view = c.make(base);
    EXPECT_TRUE(view.impl()->storage() == base.impl()->storage());
    const uint32_t version = base.version();
    view.fill_(-7.0);
    EXPECT_EQ(count_of(view, -7.0), static_cast<size_t>(view.numel()));
    EXPECT_EQ(count_of(base, -7.0), c.elements_written);
    EXPECT_GT(base.version(), version);
  }
}

TEST(ViewSemantics, WritesLandAtTheMappedElement) {
  const st::Tensor base = iota({3, 4});
  base.t().select(0, 3).select(0, 1).fill_(100.0);  // t()[3][1] is base[1][3]
  EXPECT_EQ(base.select(0, 1).select(0, 3).item<double>(), 100.0);
  base.diagonal(-1).select(0, 1).fill_(200.0);  // the second element below the diagonal
  EXPECT_EQ(base.select(0, 2).select(0, 1).item<double>(), 200.0);
  base.slice(1, -3, std::nullopt, 2).select(0, 0).select(0, 1).fill_(300.0);  // columns 1, 3
  EXPECT_EQ(base.select(0, 0).select(0, 3).item<double>(), 300.0);
}

TEST(ViewSemantics, ReshapeCopiesOnlyWhenNoViewExists) {
  const st::Tensor x = iota({3, 4});
  EXPECT_TRUE(x.reshape({2, 6}).impl()->storage() == x.impl()->storage());
  EXPECT_TRUE(x.t().reshape({4, 3, 1}).impl()->storage() == x.impl()->storage());

  const st::Tensor transposed = x.t();
  const st::Tensor flat = transposed.reshape({12});
  EXPECT_FALSE(flat.impl()->storage() == x.impl()->storage());
  EXPECT_TRUE(flat.is_contiguous());
  EXPECT_EQ(flat.to_vector<double>(), transposed.to_vector<double>());
  flat.fill_(-1.0);
  EXPECT_EQ(count_of(x, -1.0), 0u);

  const st::Tensor expanded = x.narrow(0, 0, 1).expand({3, 4});
  EXPECT_FALSE(expanded.reshape({12}).impl()->storage() == x.impl()->storage());
  EXPECT_TRUE(expanded.reshape({3, 2, 2}).impl()->storage() == x.impl()->storage());
}

TEST(ViewSemantics, ExpandGivesStrideZeroAndKeepsSizes) {
  const st::Tensor x = iota({3, 1});
  const st::Tensor e = x.expand({2, -1, 5});
  EXPECT_EQ(e.sizes(), st::IntArrayRef({2, 3, 5}));
  EXPECT_EQ(e.strides(), st::IntArrayRef({0, 1, 0}));
}

// ---- joins and indexing: semantics -------------------------------------------------

TEST(ShapeJoins, CatPromotesAndSkipsLegacyEmptyTensors) {
  const st::Tensor joined = st::cat({st::ones({2}, st::kInt64), st::zeros({1})}, 0);
  EXPECT_EQ(joined.dtype(), st::kFloat32);
  EXPECT_EQ(joined.to_vector<double>(), (std::vector<double>{1, 1, 0}));
  // A [0] tensor is skipped in the shape checks but still promotes.
  const st::Tensor skipped = st::cat({st::zeros({0}, st::kFloat64), st::ones({2, 3})}, 1);
  EXPECT_EQ(skipped.sizes(), st::IntArrayRef({2, 3}));
  EXPECT_EQ(skipped.dtype(), st::kFloat64);
  // Large enough to run in parallel.
  const st::Tensor a = iota({300, 200}), b = iota({100, 300}).t();  // b[i][j] = 300 j + i
  const st::Tensor wide = st::cat({a, b, a}, 1);
  EXPECT_EQ(wide.select(0, 299).select(0, 250).item<double>(), 50 * 300 + 299);
  EXPECT_EQ(wide.select(0, 7).select(0, 301).item<double>(), 7 * 200 + 1);
}

TEST(IndexingSemantics, InPlaceVariantsWriteIntoSelfAndBumpTheVersion) {
  const st::Tensor index = indices({2, 0, 2});
  const st::Tensor source = iota({3, 4});
  {
    const st::Tensor self = st::zeros({3, 4}, st::kFloat64);
    const st::Tensor expected = self.index_add(0, index, source, 2);
    const uint32_t version = self.version();
    const st::Tensor& result = self.index_add_(0, index, source, 2);
    EXPECT_EQ(result.impl(), self.impl());
    EXPECT_GT(self.version(), version);
    EXPECT_EQ(self.to_vector<double>(), expected.to_vector<double>());
    // Row 2 gets rows 0 and 2 of source, doubled.
    EXPECT_EQ(self.select(0, 2).to_vector<double>(), (std::vector<double>{16, 20, 24, 28}));
  }
  {
    const st::Tensor self = st::zeros({3, 4}, st::kFloat64);
    const st::Tensor scatter_index = st::tensor(std::vector<int64_t>{1, 1, 0, 1}, {1, 4});
    const st::Tensor expected = self.scatter_add(0, scatter_index, source);
    self.scatter_add_(0, scatter_index, source);
    EXPECT_EQ(self.to_vector<double>(), expected.to_vector<double>());
    EXPECT_EQ(self.select(0, 1).to_vector<double>(), (std::vector<double>{0, 1, 0, 3}));
  }
  {
    // masked_fill_ through a transposed view writes into the base.
    const st::Tensor base = iota({3, 4});
    const st::Tensor mask = st::tensor(std::vector<bool>{true, false, false}, {3});
    base.t().masked_fill_(mask, -1.0);
    EXPECT_EQ(base.select(0, 0).to_vector<double>(), (std::vector<double>{-1, -1, -1, -1}));
    EXPECT_EQ(count_of(base, -1.0), 4u);
  }
}

}  // namespace
