#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <type_traits>

#include "kernels/cpu/gemm.h"

namespace strata::cpu {
namespace {

// Note [Thin products]
// A blocked GEMM packs both operands into cache-friendly panels; for a product
// with few rows or a short inner dim the packing is a large share of the work.
// The MLP's layers make two such shapes (bench/gemm.cpp times both):
// - a short inner dim (k <= kShortInner) with b row-major, e.g. the weight
//   gradient g^T x of a batch of 32: a register-tiled loop reads a and b in place
//   (a broadcast, b a few vector loads per step) and keeps its output tile in
//   registers over the whole inner dim: no packing at all, which beats OpenBLAS
//   on [128, 32] x [32, 784] (StrataThin against OpenBlasThin).
// - few rows (m <= kThinRows) times a column-major b, the layer x W^T: Eigen's GEMM
//   kernels run on packing buffers this thread keeps (Eigen would allocate them per
//   call: ~400 KB of fresh pages for a 784 x 128 weight). On [32, 784] x [784, 128]
//   that beats OpenBLAS, whose kernels for this shape run at half their peak.
//   Only where Eigen has AVX-512 kernels; with AVX2 Eigen's GEMM trails
//   OpenBLAS (Note [GEMM through OpenBLAS], linalg.cpp).
// With few rows (m <= kThinRows) both routes reach further: the broadcast loop
// takes inner dims up to kFewRowsInner (a conv's im2col product [32, 144] x
// [144, 121]: its tile of b, k x 48 values, stays in L2), and Eigen's kernels take
// a long inner dim (k >= kLongInner) with few columns, a conv's per-sample weight
// gradient [16, 676] x [676, 9]. On an AVX-512 CPU whose OpenBLAS runs its AVX2
// kernels, both take these shapes in two thirds to three quarters of OpenBLAS's time.
constexpr int64_t kShortInner = 64;
constexpr int64_t kFewRowsInner = 320;
constexpr int64_t kThinRows = 256;
// Eigen's kernels take part only with AVX-512 (above); then these bound them.
[[maybe_unused]] constexpr int64_t kLongInner = 256;
// Below this many columns or inner steps Eigen's blocking costs more than OpenBLAS's
// small-matrix kernels (several times more for a layer's [32, 128] x [128, 10]).
[[maybe_unused]] constexpr int64_t kLargeEnough = 32;

template <class T>
using Packet = typename Eigen::internal::packet_traits<T>::type;
template <class T>
constexpr int64_t kLanes = Eigen::internal::unpacket_traits<Packet<T>>::size;

// The broadcast kernel's tile: kTileRows x kTilePackets packets of accumulators,
// as many as the vector registers hold next to the row of b and the broadcast.
constexpr int kTilePackets = 3;
template <class T>
constexpr int kTileRows = sizeof(Packet<T>) >= 64 ? 6 : 4;

template <class T>
void store(T* out, T value, T beta, T alpha) {
  *out = beta == T(0) ? alpha * value : beta * *out + alpha * value;
}

// Whether a tile's last packet may be a part one, loaded and stored under a lane
// mask (Eigen has masked Packet16f loads and stores): no copy of the last columns.
#ifdef __AVX512F__
template <class T>
constexpr bool kMaskedTail =
    std::is_same_v<T, float> && std::is_same_v<Packet<T>, Eigen::internal::Packet16f>;
#else
template <class T>
constexpr bool kMaskedTail = false;
#endif

// Packet q of a tile whose last packet holds `last` lanes (Masked) or all of them.
template <bool Masked, int Packets, class T>
Packet<T> load_packet(const T* from, int q, int64_t last) {
  if constexpr (Masked) {
    if (q == Packets - 1) {
      return Eigen::internal::ploadu<Packet<T>>(from, static_cast<uint16_t>((1u << last) - 1));
    }
  }
  (void)last;
  return Eigen::internal::ploadu<Packet<T>>(from);
}

template <bool Masked, int Packets, class T>
void store_packet(T* to, const Packet<T>& value, int q, int64_t last) {
  if constexpr (Masked) {
    if (q == Packets - 1) {
      Eigen::internal::pstoreu(to, value, static_cast<uint16_t>((1u << last) - 1));
      return;
    }
  }
  (void)last;
  Eigen::internal::pstoreu(to, value);
}

// A Rows x Packets tile of c at (i0, j0): for every p, a[i, p] broadcast times a
// row of b, accumulated in registers over the whole inner dim. Masked: the last
// packet covers only `last` columns (kMaskedTail).
template <int Rows, int Packets, class T, bool Masked = false>
void broadcast_tile(int64_t k, const T* a, int64_t a_row_stride, int64_t a_col_stride, const T* b,
                    int64_t b_row_stride, T* c, int64_t c_row_stride, T beta, T alpha,
                    int64_t last = kLanes<T>) {
  using P = Packet<T>;
  namespace ei = Eigen::internal;
  P acc[Rows][Packets];
  for (int r = 0; r < Rows; ++r) {
    for (int q = 0; q < Packets; ++q) acc[r][q] = ei::pset1<P>(T(0));
  }
  for (int64_t p = 0; p < k; ++p) {
    P b_row[Packets];
    for (int q = 0; q < Packets; ++q)
      b_row[q] = load_packet<Masked, Packets>(b + p * b_row_stride + q * kLanes<T>, q, last);
    for (int r = 0; r < Rows; ++r) {
      const P a_value = ei::pset1<P>(a[r * a_row_stride + p * a_col_stride]);
      for (int q = 0; q < Packets; ++q) acc[r][q] = ei::pmadd(a_value, b_row[q], acc[r][q]);
    }
  }
  const P alpha_packet = ei::pset1<P>(alpha);
  for (int r = 0; r < Rows; ++r) {
    for (int q = 0; q < Packets; ++q) {
      T* out = c + r * c_row_stride + q * kLanes<T>;
      P value = ei::pmul(alpha_packet, acc[r][q]);
      if (beta != T(0)) {
        value = ei::pmadd(ei::pset1<P>(beta), load_packet<Masked, Packets>(out, q, last), value);
      }
      store_packet<Masked, Packets>(out, value, q, last);
    }
  }
}

// The last columns of a panel, fewer than a packet: b's are copied into a
// zero-padded [k, kLanes] block once per panel, so that they too run through a
// one-packet tile. A scalar loop over them runs at a packet's lanes' fraction of
// the rate, which on a narrow panel (a conv's 11 x 11 output: 121 columns) costs
// as much as all the packets before them. Not made (count 0) where the last tile is
// masked instead (kMaskedTail).
template <class T>
struct ColumnTail {
  int64_t begin = 0;
  int64_t count = 0;
  alignas(64) T b[kFewRowsInner * kLanes<T>];

  ColumnTail(int64_t k, const T* b_panel, int64_t b_row_stride, int64_t j0, int64_t j1) {
    if constexpr (kMaskedTail<T>) return;  // broadcast_rows masks its last tile instead
    count = (j1 - j0) % kLanes<T>;
    begin = j1 - count;
    if (count == 0) return;
    for (int64_t p = 0; p < k; ++p) {
      T* row = b + p * kLanes<T>;
      std::copy(b_panel + p * b_row_stride + begin, b_panel + p * b_row_stride + j1, row);
      std::fill(row + count, row + kLanes<T>, T(0));
    }
  }
};

// Rows [i0, i0 + Rows) of c over columns [j0, j1): whole tiles, narrower tiles,
// then the tail through a tile on its padded copy.
template <int Rows, class T>
void broadcast_rows(int64_t k, const T* a, int64_t a_row_stride, int64_t a_col_stride, const T* b,
                    int64_t b_row_stride, T* c, int64_t c_row_stride, int64_t j0, int64_t j1,
                    const ColumnTail<T>& tail, T beta, T alpha) {
  constexpr int64_t kWide = kTilePackets * kLanes<T>;
  int64_t j = j0;
  for (; j + kWide <= j1; j += kWide) {
    broadcast_tile<Rows, kTilePackets>(k, a, a_row_stride, a_col_stride, b + j, b_row_stride, c + j,
                                       c_row_stride, beta, alpha);
  }
  if constexpr (kMaskedTail<T>) {
    // The rest, fewer than kWide columns, as one tile of as many packets as it needs.
    static_assert(kTilePackets == 3);
    const int64_t rest = j1 - j, packets = (rest + kLanes<T> - 1) / kLanes<T>;
    const int64_t last = rest - (packets - 1) * kLanes<T>;
    const auto tile = [&](auto run) {
      run(k, a, a_row_stride, a_col_stride, b + j, b_row_stride, c + j, c_row_stride, beta, alpha,
          last);
    };
    if (packets == 1) tile(broadcast_tile<Rows, 1, T, true>);
    if (packets == 2) tile(broadcast_tile<Rows, 2, T, true>);
    if (packets == 3) tile(broadcast_tile<Rows, 3, T, true>);
  } else {
    for (; j + kLanes<T> <= j1; j += kLanes<T>) {
      broadcast_tile<Rows, 1>(k, a, a_row_stride, a_col_stride, b + j, b_row_stride, c + j,
                              c_row_stride, beta, alpha);
    }
    if (tail.count == 0) return;
    alignas(64) T products[Rows * kLanes<T>];
    broadcast_tile<Rows, 1>(k, a, a_row_stride, a_col_stride, tail.b, kLanes<T>, products,
                            kLanes<T>, T(0), T(1));
    for (int r = 0; r < Rows; ++r) {
      for (int64_t t = 0; t < tail.count; ++t) {
        store(c + r * c_row_stride + tail.begin + t, products[r * kLanes<T> + t], beta, alpha);
      }
    }
  }
}

// Column panels of b (k rows of a few tiles, in L1) are swept by every row tile.
template <class T>
void broadcast_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_row_stride,
                    int64_t a_col_stride, const T* b, int64_t b_row_stride, T beta, T* c,
                    int64_t c_row_stride) {
  constexpr int kRows = kTileRows<T>;
  const int64_t panel = 4 * kTilePackets * kLanes<T>;
  for (int64_t j0 = 0; j0 < n; j0 += panel) {
    const int64_t j1 = std::min(n, j0 + panel);
    const ColumnTail<T> tail(k, b, b_row_stride, j0, j1);
    int64_t i = 0;
    for (; i + kRows <= m; i += kRows) {
      broadcast_rows<kRows>(k, a + i * a_row_stride, a_row_stride, a_col_stride, b, b_row_stride,
                            c + i * c_row_stride, c_row_stride, j0, j1, tail, beta, alpha);
    }
    for (; i < m; ++i) {
      broadcast_rows<1>(k, a + i * a_row_stride, a_row_stride, a_col_stride, b, b_row_stride,
                        c + i * c_row_stride, c_row_stride, j0, j1, tail, beta, alpha);
    }
  }
}

#ifdef __AVX512F__
// Eigen's blocking with packing buffers owned by this thread, grown on demand and
// kept: the product runs Eigen's kernels without allocating.
template <class T>
class ThreadWorkspace : public Eigen::internal::level3_blocking<T, T> {
 public:
  // For a row-major output Eigen computes the transposed product, whose rows are
  // the output's columns: the blocks are sized for that.
  ThreadWorkspace(Eigen::Index m, Eigen::Index n, Eigen::Index k) {
    this->m_mc = n;
    this->m_nc = m;
    this->m_kc = k;
    Eigen::internal::computeProductBlockingSizes<T, T, 1>(this->m_kc, this->m_mc, this->m_nc);
    this->m_blockA = buffers()[0].at_least(this->m_mc * this->m_kc);
    this->m_blockB = buffers()[1].at_least(this->m_kc * this->m_nc);
  }

 private:
  struct Buffer {
    T* data = nullptr;
    Eigen::Index size = 0;
    ~Buffer() { Eigen::internal::aligned_free(data); }
    T* at_least(Eigen::Index wanted) {
      if (wanted > size) {
        Eigen::internal::aligned_free(data);
        data = static_cast<T*>(Eigen::internal::aligned_malloc(sizeof(T) * wanted));
        size = wanted;
      }
      return data;
    }
  };
  static std::array<Buffer, 2>& buffers() {
    thread_local std::array<Buffer, 2> per_thread;
    return per_thread;
  }
};

// a row-major, b column-major; Eigen's kernels accumulate into c.
template <class T>
void eigen_gemm_in_workspace(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                             const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<RowMajor, 0, Eigen::OuterStride<>> out(c, m, n, Eigen::OuterStride<>(ldc));
  if (beta == T(0)) {
    out.setZero();
  } else if (beta != T(1)) {
    out *= beta;
  }
  ThreadWorkspace<T> workspace(m, n, k);
  Eigen::internal::general_matrix_matrix_product<Eigen::Index, T, Eigen::RowMajor, false, T,
                                                 Eigen::ColMajor, false, Eigen::RowMajor,
                                                 1>::run(m, n, k, a, lda, b, ldb, c, 1, ldc, alpha,
                                                         workspace);
}
#endif

}  // namespace

template <class T>
bool thin_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_row_stride,
               int64_t a_col_stride, const T* b, int64_t b_row_stride, int64_t b_col_stride, T beta,
               T* c, int64_t c_row_stride) {
  const bool b_row_major = b_col_stride == 1 || n <= 1;
  const bool short_inner = k <= kShortInner || (m <= kThinRows && k <= kFewRowsInner);
  if (short_inner && b_row_major && n >= kTilePackets * kLanes<T>) {
    broadcast_gemm(m, n, k, alpha, a, a_row_stride, a_col_stride, b, b_row_stride, beta, c,
                   c_row_stride);
    return true;
  }
#ifdef __AVX512F__
  const bool a_row_major = (a_col_stride == 1 || k <= 1) && (a_row_stride >= k || m <= 1);
  const bool b_col_major = (b_row_stride == 1 || k <= 1) && (b_col_stride >= k || n <= 1);
  const bool enough = k >= kLongInner || (n >= kLargeEnough && k >= kLargeEnough);
  if (m <= kThinRows && enough && a_row_major && b_col_major) {
    eigen_gemm_in_workspace(m, n, k, alpha, a, m <= 1 ? k : a_row_stride, b,
                            n <= 1 ? k : b_col_stride, beta, c, c_row_stride);
    return true;
  }
#endif
  return false;
}

template bool thin_gemm<float>(int64_t, int64_t, int64_t, float, const float*, int64_t, int64_t,
                               const float*, int64_t, int64_t, float, float*, int64_t);
template bool thin_gemm<double>(int64_t, int64_t, int64_t, double, const double*, int64_t, int64_t,
                                const double*, int64_t, int64_t, double, double*, int64_t);

}  // namespace strata::cpu
