#include "kernels/cpu/linalg.h"

#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// Calls f(T{}) with T the C++ type of a linear-algebra dtype (Int64, Float32,
// Float64); Bool has no products.
template <class F>
void dispatch_linalg_types(ScalarType dtype, const char* op, F&& f) {
  switch (dtype) {
    case ScalarType::Int64: return f(int64_t{});
    case ScalarType::Float32: return f(float{});
    case ScalarType::Float64: return f(double{});
    default: break;
  }
  STRATA_FAIL(op, "unsupported dtype ", dtype, " (expected Int64, Float32 or Float64)");
}

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

// Below this many multiply-adds a product stays on the calling thread; above it,
// every parallel task gets at least this many (a few tens of microseconds).
constexpr int64_t kGemmGrainMacs = int64_t{1} << 18;
// Row blocks of a parallel product are multiples of this (Eigen's register tile).
constexpr int64_t kBlockAlign = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Which Eigen storage order reads the operand in place (see Note [GEMM on strided
// operands]); a dim of size 1 never steps, so its stride does not matter.
enum class Order { RowMajor, ColMajor, Strided };

template <class T>
Order order_of(const MatrixRef<T>& m) {
  if (m.cols <= 1 || m.col_stride == 1) return Order::RowMajor;
  if (m.rows <= 1 || m.row_stride == 1) return Order::ColMajor;
  return Order::Strided;
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
  const int64_t outer = StorageOrder == Eigen::RowMajor ? m.row_stride : m.col_stride;
  return {m.data, m.rows, m.cols, Eigen::OuterStride<>(outer)};
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

// One single-threaded product of operands that are row- or column-major.
template <class T>
void gemm_block(const OutRef<T>& out, const MatrixRef<T>& a, const MatrixRef<T>& b, T beta,
                T alpha) {
  constexpr int kRow = Eigen::RowMajor;
  constexpr int kCol = Eigen::ColMajor;
  const bool a_rows = order_of(a) == Order::RowMajor;
  const bool b_rows = order_of(b) == Order::RowMajor;
  if (a_rows && b_rows) return eigen_gemm<T, kRow, kRow>(out, a, b, beta, alpha);
  if (a_rows) return eigen_gemm<T, kRow, kCol>(out, a, b, beta, alpha);
  if (b_rows) return eigen_gemm<T, kCol, kRow>(out, a, b, beta, alpha);
  eigen_gemm<T, kCol, kCol>(out, a, b, beta, alpha);
}

template <class T>
void scale_rows(const OutRef<T>& out, T beta) {
  for (int64_t i = 0; i < out.rows; ++i) {
    T* row = out.data + i * out.row_stride;
    for (int64_t j = 0; j < out.cols; ++j) row[j] = beta == T(0) ? T(0) : beta * row[j];
  }
}

// out = beta * out + alpha * a @ b; with `parallel`, a large product is cut into
// blocks of output rows (or columns, when the output is wide) run on TBB.
template <class T>
void gemm(const OutRef<T>& out, MatrixRef<T> a, MatrixRef<T> b, T beta, T alpha, bool parallel) {
  if (out.rows == 0 || out.cols == 0) return;
  if (a.cols == 0) return scale_rows(out, beta);
  std::vector<T> a_packed, b_packed;
  a = packed_if_strided(a, a_packed);
  b = packed_if_strided(b, b_packed);
  const int64_t macs = out.rows * out.cols * a.cols;
  const int64_t tasks = parallel ? std::min<int64_t>(num_threads(), macs / kGemmGrainMacs) : 1;
  if (tasks <= 1) return gemm_block(out, a, b, beta, alpha);
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
  const bool per_matrix_parallel = batch < num_threads();
  const int64_t macs_per_matrix = std::max<int64_t>(1, out0.rows * out0.cols * a0.cols);
  const int64_t grain = std::max<int64_t>(1, kGemmGrainMacs / macs_per_matrix);
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

template <class T>
T dot_typed(const Tensor& a, const Tensor& b) {
  const int64_t n = a.numel();
  if (n == 0) return T(0);
  using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  const T* x = a.data_ptr<T>();
  const T* y = b.data_ptr<T>();
  const int64_t sx = a.strides()[0];
  const int64_t sy = b.strides()[0];
  if (sx == 1 && sy == 1) {
    return Eigen::Map<const Vector>(x, n).dot(Eigen::Map<const Vector>(y, n));
  }
  using StridedVector = Eigen::Map<const Vector, Eigen::Unaligned, Eigen::InnerStride<>>;
  return StridedVector(x, n, Eigen::InnerStride<>(sx))
      .dot(StridedVector(y, n, Eigen::InnerStride<>(sy)));
}

template <class T>
void einsum_loop_typed(const Tensor& out, ArrayRef<Tensor> operands, const EinsumLoop& loop) {
  const int64_t num_letters = static_cast<int64_t>(loop.sizes.size());
  const int64_t num_out = loop.num_output_letters;
  const size_t num_operands = operands.size();
  int64_t out_numel = 1;
  int64_t summed_numel = 1;
  for (int64_t d = 0; d < num_letters; ++d) {
    (d < num_out ? out_numel : summed_numel) *= loop.sizes[d];
  }
  std::vector<const T*> data;
  for (const Tensor& t : operands) data.push_back(t.data_ptr<T>());
  T* out_data = out.data_ptr<T>();
  const int64_t work_per_output = std::max<int64_t>(1, summed_numel * int64_t(num_operands));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / work_per_output);
  parallel_for(0, out_numel, grain, [&](int64_t first, int64_t last) {
    DimVector index(static_cast<size_t>(num_letters), 0);
    DimVector offset(num_operands, 0);
    for (int64_t o = first; o < last; ++o) {
      // The output is contiguous in the order of its letters: o is its linear index.
      int64_t rest = o;
      for (int64_t d = num_out - 1; d >= 0; --d) {
        index[d] = rest % loop.sizes[d];
        rest /= loop.sizes[d];
      }
      for (size_t t = 0; t < num_operands; ++t) {
        offset[t] = 0;
        for (int64_t d = 0; d < num_out; ++d) offset[t] += index[d] * loop.operand_strides[t][d];
      }
      T sum = T(0);
      for (int64_t s = 0; s < summed_numel; ++s) {
        T product = T(1);
        for (size_t t = 0; t < num_operands; ++t) product *= data[t][offset[t]];
        sum += product;
        // Next summed index, the last letter fastest; a wrapped letter rewinds.
        for (int64_t d = num_letters - 1; d >= num_out; --d) {
          for (size_t t = 0; t < num_operands; ++t) offset[t] += loop.operand_strides[t][d];
          if (++index[d] < loop.sizes[d]) break;
          for (size_t t = 0; t < num_operands; ++t) {
            offset[t] -= loop.sizes[d] * loop.operand_strides[t][d];
          }
          index[d] = 0;
        }
      }
      out_data[o] = sum;
    }
  });
}

}  // namespace

void mm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha) {
  dispatch_linalg_types(out.dtype(), "strata::mm", [&](auto tag) {
    using T = decltype(tag);
    gemm(out_ref<T>(out, 0), matrix_ref<T>(a, 0), matrix_ref<T>(b, 0), beta.to<T>(), alpha.to<T>(),
         true);
  });
}

void bmm_kernel(const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_linalg_types(out.dtype(), "strata::bmm", [&](auto tag) {
    using T = decltype(tag);
    bmm_typed<T>(out, a, b);
  });
}

void dot_kernel(const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_linalg_types(out.dtype(), "strata::dot", [&](auto tag) {
    using T = decltype(tag);
    *out.data_ptr<T>() = dot_typed<T>(a, b);
  });
}

void einsum_loop_kernel(const Tensor& out, ArrayRef<Tensor> operands, const EinsumLoop& loop) {
  dispatch_linalg_types(out.dtype(), "strata::einsum", [&](auto tag) {
    using T = decltype(tag);
    einsum_loop_typed<T>(out, operands, loop);
  });
}

}  // namespace strata::cpu
