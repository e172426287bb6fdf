// Products of the shapes Note [Thin products] (kernels/cpu/gemm_thin.cpp) takes off
// the blocked GEMM: a short inner dim with a row-major right operand, and few rows
// times a column-major one. Each is checked element by element against a loop
// written here, in Float32 and Float64, through mm and addmm (beta, alpha) and on
// the kernel directly, with edges: row counts that are not a whole tile, columns
// past the last whole tile and vector, padded and transposed operands; and a
// small product with a column-major right operand, which leaves the gathering loop.
// With few rows both loops take longer inner dims (up to 320 with a row-major b).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "strata/strata.h"

namespace st = strata;

namespace {

// c = beta * c0 + alpha * a b, in double, reading a and b through their strides.
template <class T>
std::vector<double> reference(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars, int64_t acs,
                              const T* b, int64_t brs, int64_t bcs, const std::vector<T>& c0,
                              int64_t ldc, double beta, double alpha) {
  std::vector<double> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(a[i * ars + p * acs]) * double(b[p * brs + j * bcs]);
      const double before = beta == 0 ? 0.0 : beta * double(c0[static_cast<size_t>(i * ldc + j)]);
      c[static_cast<size_t>(i * n + j)] = before + alpha * sum;
    }
  }
  return c;
}

template <class T>
std::vector<T> values(int64_t count, int seed) {
  std::vector<T> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    v[static_cast<size_t>(i)] = T(std::sin(0.37 * double(i) + seed));
  return v;
}

struct Layout {
  bool a_transposed;  // a stored as [k, m]
  bool b_transposed;  // b stored as [n, k] (column-major b)
  int64_t pad;        // extra elements at the end of every stored row
};

// Runs thin_gemm on one shape and layout; where it takes the product, compares
// every element (and the padding of c, which must stay untouched) with the loop.
template <class T>
void check_kernel(int64_t m, int64_t n, int64_t k, Layout layout, double beta, double alpha) {
  const int64_t a_rows = layout.a_transposed ? k : m, a_cols = layout.a_transposed ? m : k;
  const int64_t b_rows = layout.b_transposed ? n : k, b_cols = layout.b_transposed ? k : n;
  const int64_t lda = a_cols + layout.pad, ldb = b_cols + layout.pad, ldc = n + layout.pad;
  const std::vector<T> a = values<T>(a_rows * lda, 1), b = values<T>(b_rows * ldb, 2);
  const std::vector<T> c0 = values<T>(m * ldc, 3);
  const int64_t ars = layout.a_transposed ? 1 : lda, acs = layout.a_transposed ? lda : 1;
  const int64_t brs = layout.b_transposed ? 1 : ldb, bcs = layout.b_transposed ? ldb : 1;
  std::vector<T> c = c0;
  const bool taken = st::cpu::thin_gemm<T>(m, n, k, T(alpha), a.data(), ars, acs, b.data(), brs,
                                           bcs, T(beta), c.data(), ldc);
  if (!taken) {
    EXPECT_EQ(c, c0) << "a product not taken must leave c alone";
    return;
  }
  const std::vector<double> expected =
      reference(m, n, k, a.data(), ars, acs, b.data(), brs, bcs, c0, ldc, beta, alpha);
  const double tolerance = sizeof(T) == 4 ? 1e-4 : 1e-12;
  int64_t mismatches = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const double got = c[static_cast<size_t>(i * ldc + j)];
      const double want = j < n ? expected[static_cast<size_t>(i * n + j)]
                                : double(c0[static_cast<size_t>(i * ldc + j)]);
      if (std::abs(got - want) > tolerance * (1 + std::abs(want)) && mismatches++ == 0) {
        ADD_FAILURE() << "m=" << m << " n=" << n << " k=" << k << " element (" << i << ", " << j
                      << "): got " << got << ", expected " << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

template <class T>
void check_short_inner_dims() {
  const int64_t lanes = 64 / int64_t(sizeof(T));  // covers 16-, 32- and 64-byte vectors
  for (int64_t k : {1, 7, 32, 64}) {
    for (int64_t m : {1, 5, 6, 13}) {
      for (int64_t n : {3 * lanes, 3 * lanes + 5, 4 * lanes + 3, int64_t{200}}) {
        for (Layout layout : {Layout{false, false, 0}, Layout{true, false, 3}}) {
          check_kernel<T>(m, n, k, layout, 0.0, 1.0);
          check_kernel<T>(m, n, k, layout, 0.5, -2.0);
        }
      }
    }
  }
}

template <class T>
void check_few_rows() {
  for (int64_t m : {1, 3, 32, 100}) {
    for (int64_t k : {65, 300}) {
      for (int64_t n : {1, 10, 129}) {
        for (int64_t pad : {0, 5}) {
          check_kernel<T>(m, n, k, Layout{false, true, pad}, 0.0, 1.0);
          check_kernel<T>(m, n, k, Layout{false, true, pad}, 0.5, -2.0);
          // Row-major b: the broadcast loop's longer inner dims.
          check_kernel<T>(m, n, k, Layout{pad != 0, false, pad}, 0.0, 1.0);
          check_kernel<T>(m, n, k, Layout{pad != 0, false, pad}, 0.5, -2.0);
        }
      }
    }
  }
}

TEST(ThinGemm, ShortInnerDimFloat) { check_short_inner_dims<float>(); }
TEST(ThinGemm, ShortInnerDimDouble) { check_short_inner_dims<double>(); }
TEST(ThinGemm, FewRowsFloat) { check_few_rows<float>(); }
TEST(ThinGemm, FewRowsDouble) { check_few_rows<double>(); }

// addmm(bias, a, b, beta, alpha) against a loop, element by element.
void expect_addmm(const st::Tensor& bias, const st::Tensor& a, const st::Tensor& b, double beta,
                  double alpha) {
  const double tolerance = a.dtype() == st::kFloat32 ? 1e-4 : 1e-12;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<double> as = a.to(st::kFloat64).contiguous().to_vector<double>();
  const std::vector<double> bs = b.to(st::kFloat64).contiguous().to_vector<double>();
  const std::vector<double> cs = bias.to(st::kFloat64).contiguous().to_vector<double>();
  const std::vector<double> got =
      st::addmm(bias, a, b, beta, alpha).to(st::kFloat64).to_vector<double>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += as[i * k + p] * bs[p * n + j];
      const double want = beta * cs[i * n + j] + alpha * sum;
      ASSERT_NEAR(got[i * n + j], want, tolerance * (1 + std::abs(want)))
          << "[" << m << ", " << k << "] x [" << k << ", " << n << "] element (" << i << ", " << j
          << ")";
    }
  }
}

// The shapes of a linear layer and its weight gradient, through the op.
TEST(ThinGemm, LayerShapesThroughAddmm) {
  for (st::ScalarType dtype : {st::kFloat32, st::kFloat64}) {
    st::Generator gen(5);
    const st::Tensor x = st::randn({32, 784}, gen, dtype);
    const st::Tensor w = st::randn({128, 784}, gen, dtype);
    const st::Tensor g = st::randn({32, 128}, gen, dtype);
    const st::Tensor w2 = st::randn({10, 128}, gen, dtype);
    expect_addmm(st::randn({32, 128}, gen, dtype), x, w.t(), 0.5, 2.0);   // x W^T
    expect_addmm(st::zeros({128, 784}, dtype), g.t(), x, 0.0, 1.0);       // g^T x
    expect_addmm(st::randn({32, 10}, gen, dtype), g, w2.t(), 1.0, -1.0);  // h W2^T, small
  }
}

}  // namespace
