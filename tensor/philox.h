#pragma once

// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy
// as 1, 2, 3", SC 2011) and the maps from its output words to the distributions
// of the random ops. Header-only and free of library state so that CPU and CUDA
// kernels share one definition: element i of a random op is a pure function of
// (seed, offset + i), see Note [Counter-based random numbers] in tensor/generator.h.

#include <cmath>
#include <cstdint>

#ifndef STRATA_HOST_DEVICE
#if defined(__CUDACC__)
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif
#endif

namespace strata::philox {

struct Words4 {
  uint32_t w[4];
};

inline constexpr uint32_t kMultiplier0 = 0xD2511F53u;
inline constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1
inline constexpr int kRounds = 10;

// The Philox4x32 bijection with 10 rounds: counter (4 words) x key (2 words) -> 4 words.
STRATA_HOST_DEVICE inline Words4 philox4x32_10(Words4 counter, uint32_t key0, uint32_t key1) {
  uint32_t c0 = counter.w[0], c1 = counter.w[1], c2 = counter.w[2], c3 = counter.w[3];
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t product0 = static_cast<uint64_t>(kMultiplier0) * c0;
    const uint64_t product1 = static_cast<uint64_t>(kMultiplier1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32);
    const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32);
    c0 = hi1 ^ c1 ^ key0;
    c1 = static_cast<uint32_t>(product1);
    c2 = hi0 ^ c3 ^ key1;
    c3 = static_cast<uint32_t>(product0);
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return Words4{{c0, c1, c2, c3}};
}

// The four words for counter value `index` of the stream of `seed`: the seed is
// the key, the 64-bit index fills the low half of the counter.
STRATA_HOST_DEVICE inline Words4 random_words(uint64_t seed, uint64_t index) {
  const Words4 counter{{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u}};
  return philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform in [0, 1) on the grid of 2^-24 (float) or 2^-53 (double): every value
// is exact, and 1 is never reached.
STRATA_HOST_DEVICE inline float uniform_float(uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}
STRATA_HOST_DEVICE inline double uniform_double(uint32_t high, uint32_t low) {
  const uint64_t bits = (static_cast<uint64_t>(high) << 32 | low) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

template <class T>
STRATA_HOST_DEVICE inline T uniform(const Words4& r) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return uniform_float(r.w[0]);
  } else {
    return uniform_double(r.w[0], r.w[1]);
  }
}

// Standard normal by Box–Muller: one of the pair, so each element owns its
// counter: sqrt(-2 log u1) cos(2 pi u2), with u1 taken in (0, 1] to keep the
// logarithm finite. box_muller_uniforms gives (u1, u2); the CPU kernel applies
// the formula to arrays of them.
inline constexpr double kTwoPi = 6.283185307179586476925286766559;

// From the four words of one counter, passed one by one so that a loop over
// lanes of word arrays vectorises.
template <class T>
STRATA_HOST_DEVICE inline void box_muller_uniforms(uint32_t w0, uint32_t w1, uint32_t w2,
                                                   uint32_t w3, T& u1, T& u2) {
  if constexpr (sizeof(T) == sizeof(float)) {
    u1 = T(1) - uniform_float(w0);
    u2 = uniform_float(w1);
  } else {
    u1 = T(1) - uniform_double(w0, w1);
    u2 = uniform_double(w2, w3);
  }
}

template <class T>
STRATA_HOST_DEVICE inline T standard_normal(const Words4& r) {
  T u1, u2;
  box_muller_uniforms(r.w[0], r.w[1], r.w[2], r.w[3], u1, u2);
  return std::sqrt(T(-2) * std::log(u1)) * std::cos(static_cast<T>(kTwoPi) * u2);
}

// An integer in [0, range) for range >= 1, from 64 random bits. The modulo bias
// is below range / 2^64.
STRATA_HOST_DEVICE inline uint64_t below(const Words4& r, uint64_t range) {
  return (static_cast<uint64_t>(r.w[0]) << 32 | r.w[1]) % range;
}

}  // namespace strata::philox
