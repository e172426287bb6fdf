#pragma once

// Folds (sums, products) of a contiguous row in an order that depends only on its
// length. Pulls in Eigen: include it from kernels/cpu/*.cpp only.

#include <Eigen/Core>
#include <cstdint>

#include "kernels/cpu/elementwise_rows.h"

namespace strata::cpu::fixed_order {

// Note [Sums do not depend on the address]
// Eigen's vectorised sum (or product) of a dynamic-size Map folds the values
// before the first packet-aligned address one by one and starts its packets
// there, so its order, and the last bit of the result, would depend on where the
// row lies: a row of a matrix and its contiguous copy (as functionalize makes of
// a view) would sum differently. fold therefore folds in an order of its own, the
// one Eigen takes on an aligned row: whole packets read wherever they lie (Note
// [Unaligned packets from aligned loads]), alternately into two packet
// accumulators, which are combined; then an odd last packet; then the lanes; then
// the values after the last whole packet one by one. Which value goes into which
// lane depends only on its position in the row, so a fold depends only on the
// values and their count, and an unaligned row is folded in place.
//
// The fused kernels (softmax, layer_norm, group_norm, mse_loss, dot) fold their
// row sums with fold_rows, and form with map_rows the elements that go through a
// transcendental function or a possible fused multiply-add, whose bits Eigen's
// loop over a dynamic-size Map would also make depend on the address (its scalar
// head and tail): a row's results depend on its values alone, in whichever row of
// a batch, or view of a larger buffer, it lies.

// The folds: op(a, b) on packets and on values, and lanes(packet), its lanes folded.
struct Add {
  auto operator()(const auto& a, const auto& b) const { return a + b; }
  static auto lanes(const auto& x) { return x.sum(); }
};
struct Multiply {
  auto operator()(const auto& a, const auto& b) const { return a * b; }
  static auto lanes(const auto& x) { return x.prod(); }
};

// Note [Unaligned packets from aligned loads]
// Where a row does not start on a packet boundary, every unaligned packet load
// straddles two cache lines, which slows a row streaming from memory. With
// AVX-512, a packet of a row that does not start on a packet boundary is built
// instead from the two aligned packets it straddles (one two-source permute):
// exactly the lanes of the unaligned load, so the order of a fold is unchanged.
// Only packets whose two aligned packets lie inside readable memory (the row, or
// the longer row it is a block of) are built so; the others are loaded unaligned.
template <class T>
using PacketArray = Eigen::Array<T, kPacketSize<T>, 1>;

#if defined(EIGEN_VECTORIZE_AVX512)
// The packet of lanes shift .. shift + P - 1 of a followed by b.
inline __m512 lanes_from(__m512 a, __m512 b, int64_t shift) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm512_permutex2var_ps(a, _mm512_add_epi32(lane, _mm512_set1_epi32(int(shift))), b);
}
inline __m512d lanes_from(__m512d a, __m512d b, int64_t shift) {
  const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm512_permutex2var_pd(a, _mm512_add_epi64(lane, _mm512_set1_epi64(shift)), b);
}
#endif

// Values that may be read around the n folded ones: a block of a longer row may
// build its packets from aligned packets that reach into the rest of the row.
struct Readable {
  int64_t before = 0, after = 0;
};

// The packet of the n values at p that starts at p[k]; `shift` is p's distance in
// values from the packet boundary before it. Every packet goes through the same
// permute (of one unaligned packet with itself, where the aligned pair would leave
// the row), so that its lanes reach the term through one code path: two paths
// could be compiled with and without fused multiply-adds.
template <class T>
PacketArray<T> packet_at(const T* p, int64_t n, Readable readable, int64_t k, int64_t shift) {
#if defined(EIGEN_VECTORIZE_AVX512)
  constexpr int64_t P = kPacketSize<T>;
  using Raw = typename Eigen::internal::packet_traits<T>::type;
  const bool inside = k - shift >= -readable.before && k + 2 * P - shift <= n + readable.after;
  const T* lo = inside ? p + k - shift : p + k;
  const T* hi = inside ? lo + P : lo;
  PacketArray<T> x;
  Eigen::internal::pstoreu(
      x.data(), lanes_from(Eigen::internal::ploadu<Raw>(lo), Eigen::internal::ploadu<Raw>(hi),
                           inside ? shift : 0));
  return x;
#else
  (void)n;
  (void)readable;
  (void)shift;
  return Eigen::Map<const PacketArray<T>>(p + k);
#endif
}

// The values of a row from p as a term reads them: packet(k), the P values from
// k; value(k), the value at k, as a one-value array. Several rows read at the same
// positions give a term of several arrays. Its packets are plain unaligned loads,
// for rows in cache: the fused kernels read a row more than once.
template <class T>
class Row {
 public:
  explicit Row(const T* p) : p_(p) {}
  Eigen::Map<const PacketArray<T>> packet(int64_t k) const {
    return Eigen::Map<const PacketArray<T>>(p_ + k);
  }
  Eigen::Map<const Eigen::Array<T, 1, 1>> value(int64_t k) const {
    return Eigen::Map<const Eigen::Array<T, 1, 1>>(p_ + k);
  }

 private:
  const T* p_;
};

// A Row of n values whose packets packet_at builds, for a long row streamed from
// memory (Note [Unaligned packets from aligned loads]). Its lanes are a Row's.
template <class T>
class StreamedRow {
 public:
  StreamedRow(const T* p, int64_t n, Readable readable)
      : p_(p),
        n_(n),
        readable_(readable),
        shift_(static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(p) / sizeof(T) %
                                    kPacketSize<T>)) {}
  PacketArray<T> packet(int64_t k) const { return packet_at(p_, n_, readable_, k, shift_); }
  Eigen::Map<const Eigen::Array<T, 1, 1>> value(int64_t k) const { return Row<T>(p_).value(k); }

 private:
  const T* p_;
  int64_t n_;
  Readable readable_;
  int64_t shift_;
};

// The n > 0 terms folded with op in the order of Note [Sums do not depend on the
// address]: at(k), the term of the packet at k, is called once for each whole
// packet, value_at(k) once for each value after them.
template <class T, class Op, class At, class ValueAt>
T fold_positions(int64_t n, Op op, const At& at, const ValueAt& value_at) {
  constexpr int64_t P = kPacketSize<T>;
  using Packet = PacketArray<T>;
  if (n < P) {
    T result = value_at(0);
    for (int64_t k = 1; k < n; ++k) result = op(result, value_at(k));
    return result;
  }
  Packet acc0 = at(0);
  int64_t k = P;
  if (n >= 2 * P) {
    Packet acc1 = at(P);
    for (k = 2 * P; k + 2 * P <= n; k += 2 * P) {
      acc0 = op(acc0, at(k));
      acc1 = op(acc1, at(k + P));
    }
    acc0 = op(acc0, acc1);
    if (k + P <= n) {
      acc0 = op(acc0, at(k));
      k += P;
    }
  }
  T result = Op::lanes(acc0);
  for (; k < n; ++k) result = op(result, value_at(k));
  return result;
}

// term(x, ...) of the n > 0 values of rows of equal length folded with op, for a
// term that maps Eigen arrays of the rows' values at one position (packets of
// values, or one value each) to an array of the same size.
template <class T, class Op, class Term, class... Rows>
T fold_rows(int64_t n, Op op, const Term& term, const Rows&... rows) {
  return fold_positions<T>(
      n, op, [&](int64_t k) -> PacketArray<T> { return term(rows.packet(k)...); },
      [&](int64_t k) -> T { return term(rows.value(k)...).value(); });
}

// term(x) of the n > 0 values at p folded with op (a term as fold_rows takes),
// the row streamed.
template <class T, class Op, class Term>
T fold(const T* p, int64_t n, Op op, const Term& term, Readable readable = {}) {
  return fold_rows<T>(n, op, term, StreamedRow<T>(p, n, readable));
}

// The sum of term(x, ...) over the n > 0 positions of rows (fold_rows).
template <class T, class Term, class... Rows>
T sum_rows(int64_t n, const Term& term, const Rows&... rows) {
  return fold_rows<T>(n, Add{}, term, rows...);
}

// out[k] = f(x[k], ...) over the n positions of rows: whole packets from the
// first value, then the values after the last whole packet one by one. Whether a
// value is computed in a packet or alone (which can differ in the last bit: Note
// [One code path per element], elementwise_rows.h) so depends on its position,
// never on where out or the rows lie. out may be one of the rows.
template <class T, class F, class... Rows>
void map_rows(T* out, int64_t n, const F& f, const Rows&... rows) {
  constexpr int64_t P = kPacketSize<T>;
  int64_t k = 0;
  for (; k + P <= n; k += P) Eigen::Map<PacketArray<T>>(out + k) = f(rows.packet(k)...);
  for (; k < n; ++k) out[k] = f(rows.value(k)...).value();
}

// map_rows over n > 0 positions, in one pass with the sum of what it writes: the
// bits of map_rows followed by sum_rows of out.
template <class T, class F, class... Rows>
T map_and_sum_rows(T* out, int64_t n, const F& f, const Rows&... rows) {
  return fold_positions<T>(
      n, Add{},
      [&](int64_t k) {
        const PacketArray<T> x = f(rows.packet(k)...);
        Eigen::Map<PacketArray<T>>(out + k) = x;
        return x;
      },
      [&](int64_t k) { return out[k] = f(rows.value(k)...).value(); });
}

}  // namespace strata::cpu::fixed_order
