#include "tests/op_table/samples.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tensor/shape_inference.h"

namespace strata::testing {

namespace {
// A small counter-based hash: values depend only on (seed, index).
double unit_value(uint64_t seed, uint64_t i) {
  uint64_t z = (seed + 1) * 0x9E3779B97F4A7C15ULL + i * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::string shape_text(IntArrayRef sizes) { return shape_string(sizes); }
}  // namespace

Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, double low, double high, uint64_t seed) {
  const int64_t n = numel_of(sizes);
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double u = unit_value(seed, static_cast<uint64_t>(i));
    double v = low + (high - low) * u;
    if (dtype == kInt64) v = std::floor(v);
    if (dtype == kBool) v = (i + static_cast<int64_t>(seed)) % 3 != 0 ? 1.0 : 0.0;
    values[static_cast<size_t>(i)] = v;
  }
  Tensor out = make_empty_tensor(sizes, dtype, kCPU, "make_tensor");
  Tensor source = tensor(values, sizes);
  out.copy_(source);
  return out;
}

Tensor strided_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return Tensor(
      make_intrusive<TensorImpl>(base.impl()->storage(), base.dtype(), sizes, strides, offset));
}

const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Sliced: return "sliced";
    case Layout::Expanded: return "expanded";
  }
  return "?";
}

Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, Layout layout, double low, double high,
                   uint64_t seed) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (layout == Layout::Contiguous || rank == 0) return make_tensor(sizes, dtype, low, high, seed);
  std::vector<int64_t> shape = sizes.vec();
  switch (layout) {
    case Layout::Transposed: {
      // Storage holds the reversed shape; the view reverses the strides back.
      std::vector<int64_t> reversed(shape.rbegin(), shape.rend());
      Tensor base = make_tensor(reversed, dtype, low, high, seed);
      std::vector<int64_t> strides = base.strides().vec();
      std::reverse(strides.begin(), strides.end());
      return strided_view(base, shape, strides, 0);
    }
    case Layout::Sliced: {
      // Every other element of a last dim twice as long, starting at offset 1.
      std::vector<int64_t> wide = shape;
      wide.back() = 2 * shape.back() + 1;
      Tensor base = make_tensor(wide, dtype, low, high, seed);
      std::vector<int64_t> strides = base.strides().vec();
      strides.back() *= 2;
      return strided_view(base, shape, strides, numel_of(shape) == 0 ? 0 : 1);
    }
    case Layout::Expanded: {
      // The first dim is broadcast from size 1 (stride 0).
      std::vector<int64_t> narrow = shape;
      narrow[0] = 1;
      Tensor base = make_tensor(narrow, dtype, low, high, seed);
      std::vector<int64_t> strides = base.strides().vec();
      strides[0] = 0;
      return strided_view(base, shape, strides, 0);
    }
    case Layout::Contiguous: break;
  }
  return make_tensor(sizes, dtype, low, high, seed);
}

std::string ShapeCase::description() const {
  std::ostringstream out;
  out << shape_text(sizes) << ' ' << to_string(layout);
  return out.str();
}

std::string ShapePairCase::description() const { return a.description() + " x " + b.description(); }

const std::vector<ShapeCase>& unary_cases() {
  static const std::vector<ShapeCase> cases{
      {{}, Layout::Contiguous},        {{1}, Layout::Contiguous},
      {{0}, Layout::Contiguous},       {{7}, Layout::Contiguous},
      {{3, 4}, Layout::Contiguous},    {{2, 3, 4}, Layout::Contiguous},
      {{0, 3}, Layout::Contiguous},    {{3, 4}, Layout::Transposed},
      {{3, 4}, Layout::Sliced},        {{3, 4}, Layout::Expanded},
      {{2, 3, 4}, Layout::Transposed},
  };
  return cases;
}

const std::vector<ShapePairCase>& binary_cases() {
  using L = Layout;
  static const std::vector<ShapePairCase> cases{
      {{{3, 4}, L::Contiguous}, {{3, 4}, L::Contiguous}},
      {{{}, L::Contiguous}, {{3, 4}, L::Contiguous}},
      {{{3, 4}, L::Contiguous}, {{}, L::Contiguous}},
      {{{}, L::Contiguous}, {{}, L::Contiguous}},
      {{{1}, L::Contiguous}, {{5}, L::Contiguous}},
      {{{3, 1}, L::Contiguous}, {{1, 4}, L::Contiguous}},
      {{{2, 3, 4}, L::Contiguous}, {{4}, L::Contiguous}},
      {{{0, 3}, L::Contiguous}, {{3}, L::Contiguous}},
      {{{3, 4}, L::Transposed}, {{3, 4}, L::Contiguous}},
      {{{3, 4}, L::Sliced}, {{3, 4}, L::Transposed}},
      {{{3, 4}, L::Expanded}, {{4}, L::Contiguous}},
      {{{2, 3, 4}, L::Transposed}, {{3, 1}, L::Contiguous}},
  };
  return cases;
}

std::vector<Sample> unary_samples(ScalarType dtype, double low, double high) {
  std::vector<Sample> samples;
  for (const ShapeCase& c : unary_cases()) {
    samples.push_back({c.description(), {make_tensor(c.sizes, dtype, c.layout, low, high)}, {}});
  }
  return samples;
}

std::vector<Sample> binary_samples(ScalarType dtype, double low, double high) {
  std::vector<Sample> samples;
  for (const ShapePairCase& c : binary_cases()) {
    samples.push_back({c.description(),
                       {make_tensor(c.a.sizes, dtype, c.a.layout, low, high, 1),
                        make_tensor(c.b.sizes, dtype, c.b.layout, low, high, 2)},
                       {}});
  }
  return samples;
}

}  // namespace strata::testing
