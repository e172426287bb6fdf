// Random kernels: each element is drawn from its own Philox counter, so any split
// of the work across threads yields the same values (Note [Counter-based random
// numbers], tensor/generator.h).
#include "kernels/cpu/random.h"

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <atomic>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/philox_lanes.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace strata::cpu {
namespace {

// One Philox evaluation costs about as much as ten adds, so random kernels go
// parallel at a smaller size than plain elementwise ones.
constexpr int64_t kRandomGrain = kElementwiseGrain / 4;

constexpr int kLanes = kPhiloxLanes;
using WordBlock = PhiloxWordBlock;

// With AVX-512, the blocks by intrinsics: vpmuludq forms the 32 x 32-bit products
// where the portable version's vector multiply becomes 64 x 64-bit ones.
#if defined(__AVX512F__)
// 32 x 32 -> 64-bit products of the 16 lanes of a by m, split into high and low words.
inline void mulhilo_lanes(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i even = _mm512_mul_epu32(a, m);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  constexpr __mmask16 kOddLanes = 0xAAAA;
  hi = _mm512_mask_blend_epi32(kOddLanes, _mm512_srli_epi64(even, 32), odd);
  lo = _mm512_mask_blend_epi32(kOddLanes, even, _mm512_slli_epi64(odd, 32));
}

// philox::philox4x32_10 on 16 counters at once, bit for bit (random_test checks it
// against a plain transcription, across a carry into the counter's high word).
void philox_block(uint64_t seed, uint64_t first, WordBlock& out) {
  const __m512i low = _mm512_set1_epi32(static_cast<int32_t>(first));
  __m512i c0 = _mm512_add_epi32(
      low, _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  // Lanes whose low word wrapped (c0 < low, unsigned) carry into the high word.
  const __mmask16 wrapped = _mm512_cmplt_epu32_mask(c0, low);
  const __m512i high = _mm512_set1_epi32(static_cast<int32_t>(first >> 32));
  __m512i c1 = _mm512_mask_add_epi32(high, wrapped, high, _mm512_set1_epi32(1));
  __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
  const __m512i m0 = _mm512_set1_epi64(philox::kMultiplier0);
  const __m512i m1 = _mm512_set1_epi64(philox::kMultiplier1);
  uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < philox::kRounds; ++round) {
    __m512i hi0, lo0, hi1, lo1;
    mulhilo_lanes(c0, m0, hi0, lo0);
    mulhilo_lanes(c2, m1, hi1, lo1);
    c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int32_t>(key0)));
    c1 = lo1;
    c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int32_t>(key1)));
    c3 = lo0;
    key0 += philox::kWeyl0;
    key1 += philox::kWeyl1;
  }
  _mm512_store_si512(out.w[0], c0);
  _mm512_store_si512(out.w[1], c1);
  _mm512_store_si512(out.w[2], c2);
  _mm512_store_si512(out.w[3], c3);
}
#else
void philox_block(uint64_t seed, uint64_t first, WordBlock& out) {
  philox_lanes_portable(seed, first, out);
}
#endif

// emit(i, block, lanes): the block holds the words of counters first + i, ...,
// first + i + lanes - 1, for i in [0, n) a block of lanes at a time.
template <class Emit>
inline void for_each_block(uint64_t seed, uint64_t first, int64_t n, Emit emit) {
  int64_t i = 0;
  WordBlock block;
  for (; i + kLanes <= n; i += kLanes) {
    philox_block(seed, first + static_cast<uint64_t>(i), block);
    emit(i, block, kLanes);
  }
  if (i == n) return;
  const int lanes = static_cast<int>(n - i);
  for (int lane = 0; lane < lanes; ++lane) {
    const philox::Words4 r = philox::random_words(seed, first + static_cast<uint64_t>(i + lane));
    for (int k = 0; k < 4; ++k) block.w[k][lane] = r.w[k];
  }
  emit(i, block, lanes);
}

// emit(i, words of counter first + i) for i in [0, n).
template <class Emit>
inline void for_each_counter(uint64_t seed, uint64_t first, int64_t n, Emit emit) {
  for_each_block(seed, first, n, [&](int64_t i, const WordBlock& block, int lanes) {
    for (int lane = 0; lane < lanes; ++lane) {
      emit(i + lane, philox::Words4{
                         {block.w[0][lane], block.w[1][lane], block.w[2][lane], block.w[3][lane]}});
    }
  });
}

// philox::standard_normal over a run of counters, with Box–Muller's logarithm,
// square root and cosine on whole arrays (Eigen's vectorised versions). Every
// element goes through the same fixed-size packet code, padded lanes included,
// so its value does not depend on where a thread's chunk begins or ends.
template <class T>
void standard_normals(uint64_t seed, uint64_t first, int64_t n, T* out) {
  constexpr int64_t kArray = 256;
  using Array = Eigen::Array<T, kArray, 1>;
  alignas(64) T u1[kArray], u2[kArray], z[kArray];
  for (int64_t begin = 0; begin < n; begin += kArray) {
    const int64_t count = std::min(kArray, n - begin);
    std::fill(u1 + count, u1 + kArray, T(1));
    std::fill(u2 + count, u2 + kArray, T(0));
    for_each_block(seed, first + static_cast<uint64_t>(begin), count,
                   [&](int64_t i, const WordBlock& b, int lanes) {
                     for (int lane = 0; lane < lanes; ++lane) {
                       philox::box_muller_uniforms(b.w[0][lane], b.w[1][lane], b.w[2][lane],
                                                   b.w[3][lane], u1[i + lane], u2[i + lane]);
                     }
                   });
    const Eigen::Map<const Array, Eigen::Aligned64> first_uniforms(u1), second_uniforms(u2);
    Eigen::Map<Array, Eigen::Aligned64> normals(z);
    normals = (T(-2) * first_uniforms.log()).sqrt() *
              (static_cast<T>(philox::kTwoPi) * second_uniforms).cos();
    std::copy(z, z + count, out + begin);
  }
}

// out[i] = sample(philox words of element i) over a contiguous output.
template <class T, class Sample>
void generate_contiguous(const Tensor& out, PhiloxStream stream, Sample sample) {
  T* data = out.data_ptr<T>();
  parallel_for(0, out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
    T* chunk = data + begin;
    for_each_counter(stream.seed, stream.offset + static_cast<uint64_t>(begin), end - begin,
                     [&](int64_t i, const philox::Words4& r) { chunk[i] = sample(r); });
  });
}

// out[i] = combine(philox words of element i, values of the N inputs at i) over
// a layout whose operand 0 is the contiguous output (inputs may broadcast or be
// strided). Rows of a contiguous output are contiguous, and the element index of
// a row's start is its byte distance from the output's first element.
template <class T, size_t N, class Combine>
void generate_with_inputs(const Tensor& out, const ElementwiseLayout& layout, PhiloxStream stream,
                          Combine combine) {
  struct Context {
    const char* base;
    PhiloxStream stream;
    Combine combine;
  } ctx{static_cast<const char*>(out.data_ptr()), stream, combine};
  run_elementwise(
      layout,
      [](void* raw, char** data, const int64_t* strides, int64_t n) {
        const Context& c = *static_cast<const Context*>(raw);
        const uint64_t first =
            c.stream.offset + static_cast<uint64_t>(data[0] - c.base) / sizeof(T);
        T* o = reinterpret_cast<T*>(data[0]);
        for_each_counter(c.stream.seed, first, n, [&](int64_t i, const philox::Words4& r) {
          std::array<T, N> inputs;
          for (size_t k = 0; k < N; ++k) {
            inputs[k] = *reinterpret_cast<const T*>(data[k + 1] + i * strides[k + 1]);
          }
          o[i] = c.combine(r, inputs);
        });
      },
      &ctx);
}

}  // namespace

void uniform_kernel(const Tensor& out, PhiloxStream stream) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::rand", [&] {
    generate_contiguous<scalar_t>(
        out, stream, [](const philox::Words4& r) { return philox::uniform<scalar_t>(r); });
  });
}

void standard_normal_kernel(const Tensor& out, PhiloxStream stream) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::randn", [&] {
    scalar_t* data = out.data_ptr<scalar_t>();
    parallel_for(0, out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
      standard_normals(stream.seed, stream.offset + static_cast<uint64_t>(begin), end - begin,
                       data + begin);
    });
  });
}

void randint_kernel(const Tensor& out, int64_t low, int64_t high, PhiloxStream stream) {
  // Unsigned arithmetic: high - low may exceed INT64_MAX, and low + k wraps into range.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::randint", [&] {
    generate_contiguous<scalar_t>(out, stream, [low, range](const philox::Words4& r) {
      return static_cast<scalar_t>(
          static_cast<int64_t>(static_cast<uint64_t>(low) + philox::below(r, range)));
    });
  });
}

void bernoulli_kernel(const Tensor& out, const Tensor& p, PhiloxStream stream) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::bernoulli", [&] {
    generate_with_inputs<scalar_t, 1>(
        out, make_elementwise_layout(out, {&p}), stream,
        [](const philox::Words4& r, const std::array<scalar_t, 1>& prob) {
          return philox::uniform<scalar_t>(r) < prob[0] ? scalar_t(1) : scalar_t(0);
        });
  });
}

void normal_kernel(const Tensor& out, const Tensor& mean, const Tensor& std, PhiloxStream stream) {
  STRATA_DISPATCH_FLOATING_TYPES(out.dtype(), "strata::normal", [&] {
    generate_with_inputs<scalar_t, 2>(
        out, make_elementwise_layout(out, {&mean, &std}), stream,
        [](const philox::Words4& r, const std::array<scalar_t, 2>& mean_std) {
          return mean_std[0] + mean_std[1] * philox::standard_normal<scalar_t>(r);
        });
  });
}

bool all_within(const Tensor& t, double low, double high) {
  struct Context {
    double low, high;
    std::atomic<bool> ok{true};
  } ctx{low, high};
  const ElementwiseLayout layout = make_elementwise_layout(t, {});
  STRATA_DISPATCH_FLOATING_TYPES(t.dtype(), "strata::all_within", [&] {
    run_elementwise(
        layout,
        [](void* raw, char** data, const int64_t* strides, int64_t n) {
          Context& c = *static_cast<Context*>(raw);
          bool ok = true;
          for (int64_t i = 0; i < n; ++i) {
            const double v = *reinterpret_cast<const scalar_t*>(data[0] + i * strides[0]);
            ok &= v >= c.low && v <= c.high;
          }
          if (!ok) c.ok.store(false, std::memory_order_relaxed);
        },
        &ctx);
  });
  return ctx.ok.load(std::memory_order_relaxed);
}

}  // namespace strata::cpu
