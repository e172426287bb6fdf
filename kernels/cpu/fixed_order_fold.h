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

// term(x) of the n > 0 values at p folded with op, for a term that maps an Eigen
// array expression to one of the same size (a packet of values, or one value).
template <class T, class Op, class Term>
T fold(const T* p, int64_t n, Op op, const Term& term, Readable readable = {}) {
  constexpr int64_t P = kPacketSize<T>;
  using Packet = PacketArray<T>;
  using ValueAt = Eigen::Map<const Eigen::Array<T, 1, 1>>;
  if (n < P) {
    T result = term(ValueAt(p)).value();
    for (int64_t k = 1; k < n; ++k) result = op(result, term(ValueAt(p + k)).value());
    return result;
  }
  const int64_t shift = static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(p) / sizeof(T) % P);
  auto at = [&](int64_t k) { return packet_at(p, n, readable, k, shift); };
  Packet acc0 = term(at(0));
  int64_t k = P;
  if (n >= 2 * P) {
    Packet acc1 = term(at(P));
    for (k = 2 * P; k + 2 * P <= n; k += 2 * P) {
      acc0 = op(acc0, term(at(k)));
      acc1 = op(acc1, term(at(k + P)));
    }
    acc0 = op(acc0, acc1);
    if (k + P <= n) {
      acc0 = op(acc0, term(at(k)));
      k += P;
    }
  }
  T result = Op::lanes(acc0);
  for (; k < n; ++k) result = op(result, term(ValueAt(p + k)).value());
  return result;
}

}  // namespace strata::cpu::fixed_order
