// Outputs of 64 MiB and more are written through an L1 buffer with streaming
// stores (Note [Streaming large outputs], kernels/cpu/elementwise.cpp). These
// tests check such outputs element by element against loops written here: rows
// whose length is odd (so they start at every alignment, and parallel chunks
// start mid-row), one and two threads, in place, and a strided copy.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "strata/strata.h"

namespace st = strata;

namespace {

// 4097 x 4099 Float32 elements are 67.2 MB, above the 64 MiB threshold.
constexpr int64_t kRows = 4097;
constexpr int64_t kCols = 4099;

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>(i % 1013);
  return v;
}

// Counts elements that differ from expected(i) and reports the first one.
template <class Expected>
void expect_elements(const st::Tensor& out, Expected expected) {
  const std::vector<float> got = out.contiguous().to_vector<float>();
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected(static_cast<int64_t>(i)) && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << "first mismatch at element " << first << ": got " << got[first]
                            << ", expected " << expected(static_cast<int64_t>(first));
}

void check_outer_product() {
  const std::vector<float> a = ramp(kRows, 0.5f), b = ramp(kCols, 0.25f);
  const st::Tensor out = st::tensor(a, {kRows, 1}) * st::tensor(b, {1, kCols});
  ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{kRows, kCols}));
  expect_elements(out, [&](int64_t i) {
    return a[static_cast<size_t>(i / kCols)] * b[static_cast<size_t>(i % kCols)];
  });
}

struct OneThread {
  OneThread() { st::cpu::set_num_threads(1); }
  ~OneThread() { st::cpu::set_num_threads(0); }
};

TEST(StreamedOutput, BroadcastProductMatchesLoop) { check_outer_product(); }

TEST(StreamedOutput, BroadcastProductUnderOneThreadMatchesLoop) {
  const OneThread one_thread;
  check_outer_product();
}

TEST(StreamedOutput, InPlaceAddReadsEachChunkBeforeWritingIt) {
  const int64_t n = kRows * kCols;
  const std::vector<float> x = ramp(n, 1.0f), y = ramp(n, 0.125f);
  st::Tensor t = st::tensor(x, {n});
  t.add_(st::tensor(y, {n}), 2.0);
  expect_elements(
      t, [&](int64_t i) { return x[static_cast<size_t>(i)] + 2.0f * y[static_cast<size_t>(i)]; });
}

TEST(StreamedOutput, StridedCopyMatchesLoop) {
  // The columns 1.. of a [kRows, kCols + 1] tensor: rows of kCols elements, each
  // starting one element past a row of the source.
  const std::vector<float> x = ramp(kRows * (kCols + 1), 1.0f);
  const st::Tensor source = st::tensor(x, {kRows, kCols + 1});
  const st::Tensor copy = source.slice(1, 1, kCols + 1).contiguous();
  expect_elements(copy, [&](int64_t i) {
    return x[static_cast<size_t>(i / kCols * (kCols + 1) + i % kCols + 1)];
  });
}

}  // namespace
