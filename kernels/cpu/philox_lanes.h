#pragma once

// Philox4x32-10 on 16 consecutive counters at once, in GCC/Clang vector types:
// the CPU random kernels' block generator wherever there are no AVX-512
// intrinsics (kernels/cpu/random.cpp), written once for every target (one
// register with AVX-512, two with AVX2, four with SSE). Included by its test
// too, so the path that other machines run is checked here, bit for bit against
// philox::random_words.

#include <cstdint>
#include <cstring>

#include "tensor/philox.h"

namespace strata::cpu {

inline constexpr int kPhiloxLanes = 16;

// Word k of counter first + lane in w[k][lane].
struct PhiloxWordBlock {
  alignas(64) uint32_t w[4][kPhiloxLanes];
};

inline void philox_lanes_portable(uint64_t seed, uint64_t first, PhiloxWordBlock& out) {
  using Words = uint32_t __attribute__((vector_size(4 * kPhiloxLanes)));
  using Products = uint64_t __attribute__((vector_size(8 * kPhiloxLanes)));
  const auto low = static_cast<uint32_t>(first);
  const Words lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  Words c0 = low + lane;
  // A lane whose low word wrapped (c0 < low) carries into the high word; the
  // comparison is all ones (-1) there.
  Words c1 = static_cast<uint32_t>(first >> 32) - reinterpret_cast<Words>(c0 < low);
  Words c2 = {}, c3 = {};
  auto key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < philox::kRounds; ++round) {
    const Products p0 = __builtin_convertvector(c0, Products) * uint64_t{philox::kMultiplier0};
    const Products p1 = __builtin_convertvector(c2, Products) * uint64_t{philox::kMultiplier1};
    c0 = __builtin_convertvector(p1 >> 32, Words) ^ c1 ^ key0;
    c1 = __builtin_convertvector(p1, Words);
    c2 = __builtin_convertvector(p0 >> 32, Words) ^ c3 ^ key1;
    c3 = __builtin_convertvector(p0, Words);
    key0 += philox::kWeyl0;
    key1 += philox::kWeyl1;
  }
  std::memcpy(out.w[0], &c0, sizeof c0);
  std::memcpy(out.w[1], &c1, sizeof c1);
  std::memcpy(out.w[2], &c2, sizeof c2);
  std::memcpy(out.w[3], &c3, sizeof c3);
}

}  // namespace strata::cpu
