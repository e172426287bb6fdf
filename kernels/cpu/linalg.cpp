#include "kernels/cpu/linalg.h"

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linalg_dispatch.h"

#ifdef STRATA_HAVE_BLAS
#include <cblas.h>
// OpenBLAS's thread control, declared here as cblas.h may be another vendor's.
extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_corename(void);
}
#include <cctype>
#include <string>
#endif

#include "kernels/cpu/parallel.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// A matrix operand in place: element (i, j) is data[i * row_stride + j * col_stride].
template <class T>
struct MatrixRef {
  const T* data;
  int64_t rows, cols, row_stride, col_stride;

  MatrixRef rows_block(int64_t begin, int64_t count) const {
    return {data + begin * row_stride, count, cols, row_stride, col_stride};
  }
  MatrixRef cols_block(int64_t begin, int64_t count) const {
    return {data + begin * col_stride, rows, count, row_stride, col_stride};
  }
};

// An output matrix with unit column stride.
template <class T>
struct OutRef {
  T* data;
  int64_t rows, cols, row_stride;

  OutRef rows_block(int64_t begin, int64_t count) const {
    return {data + begin * row_stride, count, cols, row_stride};
  }
  OutRef cols_block(int64_t begin, int64_t count) const {
    return {data + begin, rows, count, row_stride};
  }
};

template <class T>
MatrixRef<T> matrix_ref(const Tensor& t, int64_t first_dim) {
  return {t.data_ptr<T>(), t.sizes()[first_dim], t.sizes()[first_dim + 1], t.strides()[first_dim],
          t.strides()[first_dim + 1]};
}

// A batch of products is split into parallel tasks of at least this many
// multiply-adds (a few microseconds).
constexpr int64_t kGemmGrainMacs = int64_t{1} << 18;
// Row blocks of a parallel product are multiples of this (Eigen's register tile).
constexpr int64_t kBlockAlign = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Which storage order reads the operand in place (see Note [GEMM on strided
// operands]): unit stride along the inner dim and an outer stride that steps over
// a whole inner run, as BLAS requires. A dim of size 1 never steps, so its stride
// does not matter; an expanded operand (outer stride 0) is Strided.
enum class Order { RowMajor, ColMajor, Strided };

template <class T>
Order order_of(const MatrixRef<T>& m) {
  if ((m.cols <= 1 || m.col_stride == 1) && (m.rows <= 1 || m.row_stride >= m.cols)) {
    return Order::RowMajor;
  }
  if ((m.rows <= 1 || m.row_stride == 1) && (m.cols <= 1 || m.col_stride >= m.rows)) {
    return Order::ColMajor;
  }
  return Order::Strided;
}

// The outer stride for a storage order; a single outer index gets the natural one.
template <class T>
int64_t outer_stride(const MatrixRef<T>& m, Order order) {
  if (order == Order::RowMajor) return m.rows <= 1 ? std::max<int64_t>(m.cols, 1) : m.row_stride;
  return m.cols <= 1 ? std::max<int64_t>(m.rows, 1) : m.col_stride;
}

template <class T>
MatrixRef<T> packed_if_strided(const MatrixRef<T>& m, std::vector<T>& buffer) {
  if (order_of(m) != Order::Strided) return m;
  buffer.resize(static_cast<size_t>(m.rows * m.cols));
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int64_t j = 0; j < m.cols; ++j) {
      buffer[static_cast<size_t>(i * m.cols + j)] = m.data[i * m.row_stride + j * m.col_stride];
    }
  }
  return {buffer.data(), m.rows, m.cols, m.cols, 1};
}

template <class T, int StorageOrder>
using ConstMatrixMap =
    Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, StorageOrder>,
               Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using OutMatrixMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                                Eigen::Unaligned, Eigen::OuterStride<>>;

template <class T, int StorageOrder>
ConstMatrixMap<T, StorageOrder> eigen_map(const MatrixRef<T>& m) {
  const Order order = StorageOrder == Eigen::RowMajor ? Order::RowMajor : Order::ColMajor;
  return {m.data, m.rows, m.cols, Eigen::OuterStride<>(outer_stride(m, order))};
}

template <class T, int LhsOrder, int RhsOrder>
void eigen_gemm(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, T beta,
                T alpha) {
  OutMatrixMap<T> dst(out.data, out.rows, out.cols, Eigen::OuterStride<>(out.row_stride));
  const auto lhs = eigen_map<T, LhsOrder>(a);
  const auto rhs = eigen_map<T, RhsOrder>(b);
  if (beta == T(0)) {
    dst.noalias() = alpha * lhs * rhs;
  } else {
    if (beta != T(1)) dst *= beta;
    dst.noalias() += alpha * lhs * rhs;
  }
}

#ifdef STRATA_HAVE_BLAS
// Note [GEMM through OpenBLAS]
// When the build finds OpenBLAS (CMake option STRATA_BLAS), float and double
// products call cblas_?gemm: on AVX2, Eigen's GEMM reaches only about 75 % of
// OpenBLAS's (bench/gemm.cpp, numbers in bench/README.md). Small products never
// get here (Note [Small products]), nor thin ones (Note [Thin products],
// gemm_thin.cpp). Strata keeps the threading: OpenBLAS runs single-threaded
// inside each TBB task, so one thread pool serves every kernel, set_num_threads
// governs GEMM too, and nothing is oversubscribed.
void keep_blas_single_threaded() {
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

// Whether OpenBLAS runs kernels as wide as Eigen's. Where Strata is built with
// AVX-512 but OpenBLAS runs its AVX2 ones (OPENBLAS_CORETYPE=Haswell set by the
// environment, or a CPU it does not know), Eigen's GEMM is the faster one, by
// about 1.4x on square products (bench/gemm.cpp), so products go to Eigen.
bool blas_kernels_as_wide_as_eigens() {
#ifdef __AVX512F__
  static const bool wide = [] {
    const char* name = openblas_get_corename();
    std::string core = name != nullptr ? name : "";
    for (char& c : core) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* avx512 : {"skylakex", "cooperlake", "sapphirerapids"}) {
      if (core.find(avx512) != std::string::npos) return true;
    }
    return false;
  }();
  return wide;
#else
  return true;
#endif
}

// BLAS takes 32-bit sizes and strides.
template <class T>
bool fits_blas(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  return out.rows <= kMax && out.cols <= kMax && a.cols <= kMax && out.row_stride <= kMax &&
         std::max(a.row_stride, a.col_stride) <= kMax &&
         std::max(b.row_stride, b.col_stride) <= kMax;
}

template <class T>
void blas_gemm(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, T beta,
               T alpha) {
  const Order a_order = order_of(a);
  const Order b_order = order_of(b);
  auto transpose = [](Order order) { return order == Order::RowMajor ? CblasNoTrans : CblasTrans; };
  const auto m = static_cast<int>(out.rows);
  const auto n = static_cast<int>(out.cols);
  const auto k = static_cast<int>(a.cols);
  const auto lda = static_cast<int>(outer_stride(a, a_order));
  const auto ldb = static_cast<int>(outer_stride(b, b_order));
  const auto ldc = static_cast<int>(out.row_stride);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, transpose(a_order), transpose(b_order), m, n, k, alpha, a.data, lda,
                b.data, ldb, beta, out.data, ldc);
  } else {
    static_assert(std::is_same_v<T, double>);
    cblas_dgemm(CblasRowMajor, transpose(a_order), transpose(b_order), m, n, k, alpha, a.data, lda,
                b.data, ldb, beta, out.data, ldc);
  }
}
#else
void keep_blas_single_threaded() {}
#endif

// One single-threaded product of operands that are row- or column-major.
template <class T>
void gemm_block(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, T beta,
                T alpha) {
  if constexpr (std::is_floating_point_v<T>) {
    if (thin_gemm(out.rows, out.cols, a.cols, alpha, a.data, a.row_stride, a.col_stride, b.data,
                  b.row_stride, b.col_stride, beta, out.data, out.row_stride)) {
      return;
    }
#ifdef STRATA_HAVE_BLAS
    if (fits_blas(out, a, b) && blas_kernels_as_wide_as_eigens()) {
      return blas_gemm(out, a, b, beta, alpha);
    }
#endif
  }
  constexpr int kRow = Eigen::RowMajor;
  constexpr int kCol = Eigen::ColMajor;
  const bool a_rows = order_of(a) == Order::RowMajor;
  const bool b_rows = order_of(b) == Order::RowMajor;
  if (a_rows && b_rows) return eigen_gemm<T, kRow, kRow>(out, a, b, beta, alpha);
  if (a_rows) return eigen_gemm<T, kRow, kCol>(out, a, b, beta, alpha);
  if (b_rows) return eigen_gemm<T, kCol, kRow>(out, a, b, beta, alpha);
  eigen_gemm<T, kCol, kCol>(out, a, b, beta, alpha);
}

// Note [Small products]
// Below kSmallGemmMacs multiply-adds (about 40^3) a register-tiled loop beats a
// blocked GEMM, whose packing and blocking cost more than the product: the many
// tiny matrices of a bmm (per-sample gradients under vmap, einsum contractions),
// small layers. It reads any strides in place. bench/gemm.cpp, StrataBmmSmall,
// times it on 8 x 8 matrices, where it is several times faster than Eigen's GEMM.
constexpr int64_t kSmallGemmMacs = int64_t{1} << 16;
// The loop gathers a column-major right operand element by element: from this
// many multiply-adds up the GEMM is faster, several times so for a layer's h W^T,
// [32, 128] x [128, 10].
constexpr int64_t kSmallGatherMacs = int64_t{1} << 12;

template <class T>
bool is_small_product(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b) {
  const int64_t macs = out.rows * out.cols * a.cols;
  const bool gathers_b = b.cols > 1 && b.col_stride != 1;
  return macs < kSmallGemmMacs && !(gathers_b && macs >= kSmallGatherMacs);
}

// A Rows x Width tile of the output at (i0, j0): Rows * Width accumulators held in
// vector registers (fixed-size Eigen arrays) over the whole inner dim, with Rows
// independent chains of multiply-adds to hide their latency.
template <int Rows, int Width, bool UnitStride, class T>
void small_gemm_tile(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, int64_t i0,
                     int64_t j0, T beta, T alpha) {
  using Block = Eigen::Array<T, Width, 1>;
  using StridedBlock = Eigen::Map<const Block, Eigen::Unaligned, Eigen::InnerStride<>>;
  std::array<Block, Rows> acc;
  for (Block& block : acc) block.setZero();
  const T* a_at = a.data + i0 * a.row_stride;
  const T* b_at = b.data + j0 * b.col_stride;
  for (int64_t p = 0; p < a.cols; ++p, a_at += a.col_stride, b_at += b.row_stride) {
    Block b_block;
    if constexpr (UnitStride) {
      b_block = Eigen::Map<const Block>(b_at);
    } else {
      b_block = StridedBlock(b_at, Eigen::InnerStride<>(b.col_stride));
    }
    for (int r = 0; r < Rows; ++r) acc[r] += a_at[r * a.row_stride] * b_block;
  }
  for (int r = 0; r < Rows; ++r) {
    Eigen::Map<Block> o(out.data + (i0 + r) * out.row_stride + j0);
    if (beta == T(0)) {
      o = alpha * acc[r];
    } else {
      o = beta * o + alpha * acc[r];
    }
  }
}

template <int Rows, bool UnitStride, class T>
void small_gemm_rows(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, int64_t i0,
                     T beta, T alpha) {
  constexpr int kVector = 32 / sizeof(T);  // one AVX register
  int64_t j = 0;
  for (; j + 2 * kVector <= out.cols; j += 2 * kVector) {
    small_gemm_tile<Rows, 2 * kVector, UnitStride>(out, a, b, i0, j, beta, alpha);
  }
  for (; j + kVector <= out.cols; j += kVector) {
    small_gemm_tile<Rows, kVector, UnitStride>(out, a, b, i0, j, beta, alpha);
  }
  for (; j + kVector / 2 <= out.cols; j += kVector / 2) {
    small_gemm_tile<Rows, kVector / 2, UnitStride>(out, a, b, i0, j, beta, alpha);
  }
  for (; j < out.cols; ++j) small_gemm_tile<Rows, 1, UnitStride>(out, a, b, i0, j, beta, alpha);
}

// out = beta * out + alpha * a @ b for small operands of any strides, tile by tile.
template <bool UnitStride, class T>
void small_gemm_strided(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, T beta,
                        T alpha) {
  constexpr int kRows = 4;
  int64_t i = 0;
  for (; i + kRows <= out.rows; i += kRows) {
    small_gemm_rows<kRows, UnitStride>(out, a, b, i, beta, alpha);
  }
  for (; i < out.rows; ++i) small_gemm_rows<1, UnitStride>(out, a, b, i, beta, alpha);
}

template <class T>
void small_gemm(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, T beta,
                T alpha) {
  if (b.cols <= 1 || b.col_stride == 1) return small_gemm_strided<true>(out, a, b, beta, alpha);
  small_gemm_strided<false>(out, a, b, beta, alpha);
}

// out = beta * out + alpha * a @ b; with `parallel`, a large product is cut into
// blocks of output rows (or columns, when the output is wide) run on TBB.
// Int64 products wrap around as Int64 add and mul do, computed unsigned (signed
// overflow is undefined behaviour: addmm's alpha and beta reach INT64_MIN).
template <class T>
void wrapping_gemm(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, T beta,
                   T alpha) {
  using U = std::make_unsigned_t<T>;
  for (int64_t i = 0; i < out.rows; ++i) {
    for (int64_t j = 0; j < out.cols; ++j) {
      U sum = 0;
      for (int64_t p = 0; p < a.cols; ++p) {
        sum += static_cast<U>(a.data[i * a.row_stride + p * a.col_stride]) *
               static_cast<U>(b.data[p * b.row_stride + j * b.col_stride]);
      }
      T& target = out.data[i * out.row_stride + j];
      const U kept = beta == T(0) ? U(0) : static_cast<U>(beta) * static_cast<U>(target);
      target = static_cast<T>(kept + static_cast<U>(alpha) * sum);
    }
  }
}

template <class T>
void gemm(const OutRef<T>& out, MatrixRef<T> a, MatrixRef<T> b, T beta, T alpha, bool parallel) {
  if (out.rows == 0 || out.cols == 0) return;
  if constexpr (std::is_integral_v<T>) return wrapping_gemm(out, a, b, beta, alpha);
  if (is_small_product(out, a, b)) return small_gemm(out, a, b, beta, alpha);
  std::vector<T> a_packed, b_packed;
  a = packed_if_strided(a, a_packed);
  b = packed_if_strided(b, b_packed);
  const int64_t max_tasks = out.rows * out.cols * a.cols / kGemmSplitMacs;
  if (!parallel || max_tasks < 2) return gemm_block(out, a, b, beta, alpha);
  const int64_t tasks = std::min<int64_t>(num_threads(), max_tasks);
  if (tasks < 2) return gemm_block(out, a, b, beta, alpha);
  const bool split_rows = out.rows >= out.cols;
  const int64_t extent = split_rows ? out.rows : out.cols;
  const int64_t block = ceil_div(ceil_div(extent, tasks), kBlockAlign) * kBlockAlign;
  parallel_for(0, ceil_div(extent, block), 1, [&](int64_t first, int64_t last) {
    for (int64_t task = first; task < last; ++task) {
      const int64_t begin = task * block;
      const int64_t count = std::min(block, extent - begin);
      if (split_rows) {
        gemm_block(out.rows_block(begin, count), a.rows_block(begin, count), b, beta, alpha);
      } else {
        gemm_block(out.cols_block(begin, count), a, b.cols_block(begin, count), beta, alpha);
      }
    }
  });
}

template <class T>
OutRef<T> out_ref(const Tensor& out, int64_t first_dim) {
  return {out.data_ptr<T>(), out.sizes()[first_dim], out.sizes()[first_dim + 1],
          out.sizes()[first_dim + 1]};
}

template <class T>
void bmm_typed(const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t batch = out.sizes()[0];
  const MatrixRef<T> a0 = matrix_ref<T>(a, 1);
  const MatrixRef<T> b0 = matrix_ref<T>(b, 1);
  const OutRef<T> out0 = out_ref<T>(out, 1);
  if (batch == 0 || out0.rows == 0 || out0.cols == 0) return;
  const int64_t a_step = a.strides()[0];
  const int64_t b_step = b.strides()[0];
  const int64_t out_step = out0.rows * out0.cols;
  // Few large matrices: each product is parallel. Many: the batch is split, and
  // each matrix is a serial product.
  const int64_t macs_per_matrix = std::max<int64_t>(1, out0.rows * out0.cols * a0.cols);
  const int64_t grain = std::max<int64_t>(1, kGemmGrainMacs / macs_per_matrix);
  const bool large = batch * macs_per_matrix >= 2 * kGemmGrainMacs;
  const bool per_matrix_parallel = large && batch < num_threads();
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      MatrixRef<T> ai = a0;
      MatrixRef<T> bi = b0;
      OutRef<T> oi = out0;
      ai.data += i * a_step;
      bi.data += i * b_step;
      oi.data += i * out_step;
      gemm(oi, ai, bi, T(0), T(1), per_matrix_parallel);
    }
  };
  if (per_matrix_parallel) {
    run(0, batch);
  } else {
    parallel_for(0, batch, grain, run);
  }
}

}  // namespace

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_row_stride,
          int64_t a_col_stride, const T* b, int64_t b_row_stride, int64_t b_col_stride, T beta,
          T* c, int64_t c_row_stride) {
  const OutRef<T> out{c, m, n, c_row_stride};
  gemm(out, MatrixRef<T>{a, m, k, a_row_stride, a_col_stride},
       MatrixRef<T>{b, k, n, b_row_stride, b_col_stride}, beta, alpha, /*parallel=*/false);
}

template void gemm<float>(int64_t, int64_t, int64_t, float, const float*, int64_t, int64_t,
                          const float*, int64_t, int64_t, float, float*, int64_t);
template void gemm<double>(int64_t, int64_t, int64_t, double, const double*, int64_t, int64_t,
                           const double*, int64_t, int64_t, double, double*, int64_t);

void mm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha) {
  keep_blas_single_threaded();
  dispatch_linalg_types(out.dtype(), "strata::mm", [&](auto tag) {
    using T = decltype(tag);
    gemm(out_ref<T>(out, 0), matrix_ref<T>(a, 0), matrix_ref<T>(b, 0), beta.to<T>(), alpha.to<T>(),
         true);
  });
}

void bmm_kernel(const Tensor& out, const Tensor& a, const Tensor& b) {
  keep_blas_single_threaded();
  dispatch_linalg_types(out.dtype(), "strata::bmm", [&](auto tag) {
    using T = decltype(tag);
    bmm_typed<T>(out, a, b);
  });
}

}  // namespace strata::cpu
