// Random operators and the Philox generator behind them.
// Philox4x32-10 is checked against the Random123 known-answer vectors and against a
// second, deliberately plain transcription of the algorithm written here; the ops'
// values are derived from that transcription, so the counter contract (element i
// is a function of seed and offset + i only) is checked, not assumed. Statistical
// checks read the samples back and compute moments with plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "strata/strata.h"
#include "kernels/cpu/philox_lanes.h"
#include "tensor/philox.h"
#include "tests/test_support.h"

namespace st = strata;

namespace {

// ---- the test's own Philox4x32-10 ----------------------------------------------------

using Block = std::array<uint32_t, 4>;

uint32_t mul_hi(uint32_t a, uint32_t b) { return static_cast<uint32_t>((uint64_t{a} * b) >> 32); }
uint32_t mul_lo(uint32_t a, uint32_t b) { return a * b; }

Block plain_philox(Block ctr, uint32_t k0, uint32_t k1) {
  for (int round = 1; round <= 10; ++round) {
    if (round > 1) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const Block next = {mul_hi(0xCD9E8D57u, ctr[2]) ^ ctr[1] ^ k0, mul_lo(0xCD9E8D57u, ctr[2]),
                        mul_hi(0xD2511F53u, ctr[0]) ^ ctr[3] ^ k1, mul_lo(0xD2511F53u, ctr[0])};
    ctr = next;
  }
  return ctr;
}

Block library_philox(const Block& ctr, uint32_t k0, uint32_t k1) {
  const st::philox::Words4 out =
      st::philox::philox4x32_10({{ctr[0], ctr[1], ctr[2], ctr[3]}}, k0, k1);
  return {out.w[0], out.w[1], out.w[2], out.w[3]};
}

// The words element `index` of a stream draws: key = seed, counter = index.
Block plain_words(uint64_t seed, uint64_t index) {
  return plain_philox({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
                      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

TEST(Philox, Random123KnownAnswers) {
  struct Kat {
    Block counter;
    uint32_t key0, key1;
    Block expected;
  };
  // Random123's tests/kat_vectors, "philox4x32 10" lines.
  const Kat kats[] = {
      {{0, 0, 0, 0}, 0, 0, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       0xffffffff,
       0xffffffff,
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       0xa4093822,
       0x299f31d0,
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& kat : kats) {
    EXPECT_EQ(library_philox(kat.counter, kat.key0, kat.key1), kat.expected);
    EXPECT_EQ(plain_philox(kat.counter, kat.key0, kat.key1), kat.expected);
  }
}

TEST(Philox, MatchesPlainTranscription) {
  uint64_t state = 0x853c49e6748fea9bULL;  // an LCG picks the inputs
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 32);
  };
  for (int i = 0; i < 1000; ++i) {
    const Block ctr = {next(), next(), next(), next()};
    const uint32_t k0 = next(), k1 = next();
    ASSERT_EQ(library_philox(ctr, k0, k1), plain_philox(ctr, k0, k1)) << "input " << i;
  }
}

// ---- values of the ops from the counter contract -----------------------------------

// The portable block generator (the CPU kernels' path without AVX-512) gives
// each lane its own counter's words, across a carry into the high word.
TEST(Philox, PortableLanesAreThePlainWordsOfTheirCounters) {
  const uint64_t seed = 0xfedcba9876543210ULL;
  for (const uint64_t first : {uint64_t{0}, uint64_t{0xfffffff7}, uint64_t{0x1fffffffa}}) {
    st::cpu::PhiloxWordBlock block;
    st::cpu::philox_lanes_portable(seed, first, block);
    for (int lane = 0; lane < st::cpu::kPhiloxLanes; ++lane) {
      const Block expected = plain_words(seed, first + static_cast<uint64_t>(lane));
      for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(block.w[k][lane], expected[static_cast<size_t>(k)])
            << "counter " << first << " + " << lane << ", word " << k;
      }
    }
  }
}

TEST(RandomOps, RandFloatIsTop24BitsOfWordZero) {
  const uint64_t seed = 0x0123456789abcdefULL;
  st::Generator gen(seed);
  gen.set_offset(0xfffffffbULL);  // the low word wraps inside a block of lanes
  const std::vector<float> values = st::rand({40}, gen).to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    const Block w = plain_words(seed, 0xfffffffbULL + i);
    EXPECT_EQ(values[i], static_cast<float>(w[0] >> 8) / 16777216.0f) << "element " << i;
  }
}

TEST(RandomOps, RandDoubleIsTop53BitsOfWordsZeroAndOne) {
  const uint64_t seed = 99;
  st::Generator gen(seed);
  const std::vector<double> values = st::rand({2, 3}, gen, st::kFloat64).to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) {
    const Block w = plain_words(seed, i);
    const uint64_t bits = ((uint64_t{w[0]} << 32) | w[1]) >> 11;
    EXPECT_EQ(values[i], std::ldexp(static_cast<double>(bits), -53)) << "element " << i;
  }
}

TEST(RandomOps, RandnIsBoxMuller) {
  const uint64_t seed = 7;
  st::Generator gen(seed);
  const std::vector<double> values = st::randn({64}, gen, st::kFloat64).to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) {
    const Block w = plain_words(seed, i);
    const double u1 =
        1.0 - std::ldexp(static_cast<double>(((uint64_t{w[0]} << 32) | w[1]) >> 11), -53);
    const double u2 = std::ldexp(static_cast<double>(((uint64_t{w[2]} << 32) | w[3]) >> 11), -53);
    const double expected = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    EXPECT_NEAR(values[i], expected, 1e-12) << "element " << i;
  }
}

// Float32 normals come from arrays of uniforms through vectorised log, sqrt and cos:
// each must still be Box–Muller of its own counter's words (to a few float ulps,
// computed here in double), and a run drawn from an offset that starts mid-block
// and mid-array must repeat the full draw's elements bit for bit.
TEST(RandomOps, RandnFloatIsBoxMullerOfItsOwnCounter) {
  const uint64_t seed = 11;
  const int64_t n = 1000;
  st::Generator gen(seed);
  const std::vector<float> values = st::randn({n}, gen, st::kFloat32).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    const Block w = plain_words(seed, static_cast<uint64_t>(i));
    const double u1 = 1.0 - std::ldexp(static_cast<double>(w[0] >> 8), -24);
    const double u2 = std::ldexp(static_cast<double>(w[1] >> 8), -24);
    const double expected = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    EXPECT_NEAR(values[static_cast<size_t>(i)], expected, 2e-6 * (1 + std::abs(expected)))
        << "element " << i;
  }
  for (uint64_t offset : {3u, 255u, 257u}) {
    st::Generator later(seed);
    later.set_offset(offset);
    const std::vector<float> slice = st::randn({300}, later, st::kFloat32).to_vector<float>();
    EXPECT_EQ(slice, std::vector<float>(values.begin() + static_cast<int64_t>(offset),
                                        values.begin() + static_cast<int64_t>(offset) + 300))
        << "offset " << offset;
  }
}

TEST(RandomOps, ResultsDependOnlyOnSeedAndOffset) {
  st::Generator a(5), b(5), c(6);
  const std::vector<double> va = st::randn({100}, a).to_vector<double>();
  EXPECT_EQ(va, st::randn({100}, b).to_vector<double>());
  EXPECT_NE(va, st::randn({100}, c).to_vector<double>());
  // A later slice of the same stream, drawn on its own, repeats those elements.
  st::Generator d(5);
  d.set_offset(40);
  const std::vector<double> slice = st::randn({10}, d).to_vector<double>();
  EXPECT_EQ(slice, std::vector<double>(va.begin() + 40, va.begin() + 50));
}

TEST(RandomOps, SuccessiveCallsAdvanceTheOffset) {
  st::Generator gen(11);
  const std::vector<double> first = st::rand({3, 4}, gen).to_vector<double>();
  EXPECT_EQ(gen.offset(), 12u);
  const std::vector<double> second = st::rand({3, 4}, gen).to_vector<double>();
  EXPECT_EQ(gen.offset(), 24u);
  EXPECT_NE(first, second);
  st::randint(0, 10, {5}, gen);
  st::bernoulli(st::full({7}, 0.5), gen);
  st::normal(st::zeros({2, 1}), st::ones({3}), gen);
  EXPECT_EQ(gen.offset(), 24u + 5 + 7 + 6);
  // Copies of a Generator share one stream.
  st::Generator copy = gen;
  st::rand({2}, copy);
  EXPECT_EQ(gen.offset(), 44u);
}

TEST(RandomOps, DefaultGenerator) {
  st::manual_seed(123);
  const std::vector<double> a = st::rand({6}).to_vector<double>();
  const std::vector<double> b = st::randn({6}).to_vector<double>();
  st::manual_seed(123);
  EXPECT_EQ(st::rand({6}).to_vector<double>(), a);
  EXPECT_EQ(st::randn({6}).to_vector<double>(), b);
  st::Generator explicit_gen(123);
  EXPECT_EQ(st::rand({6}, explicit_gen).to_vector<double>(), a);
  EXPECT_EQ(st::randn({6}, explicit_gen).to_vector<double>(), b);
}

TEST(RandomOps, ShapesAndDtypes) {
  st::Generator gen(2);
  EXPECT_EQ(st::rand({}, gen).dim(), 0);
  EXPECT_EQ(st::rand({0, 3}, gen).numel(), 0);
  EXPECT_EQ(st::rand({2}, gen).dtype(), st::kFloat32);
  EXPECT_EQ(st::randn({2}, gen, st::kFloat64).dtype(), st::kFloat64);
  EXPECT_EQ(st::randint(0, 3, {2}, gen).dtype(), st::kInt64);
  EXPECT_EQ(st::randint(0, 3, {2}, gen, st::kFloat32).dtype(), st::kFloat32);
  EXPECT_EQ(st::bernoulli(st::full({2}, 0.5, st::kFloat64), gen).dtype(), st::kFloat64);
  const st::Tensor n = st::normal(st::zeros({3, 1}), st::ones({4}, st::kFloat64), gen);
  EXPECT_EQ(n.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(n.dtype(), st::kFloat64);
}

// ---- thread count and chunking -----------------------------------------------------

class ThreadCount : public ::testing::Test {
 protected:
  void TearDown() override { st::cpu::set_num_threads(0); }
};

template <class Draw>
void expect_same_with_one_and_two_threads(Draw draw) {
  st::cpu::set_num_threads(1);
  const std::vector<double> one = draw().template to_vector<double>();
  st::cpu::set_num_threads(2);
  const std::vector<double> two = draw().template to_vector<double>();
  ASSERT_EQ(one.size(), two.size());
  EXPECT_TRUE(one == two);
}

TEST_F(ThreadCount, LargeTensorsTakeTheParallelPathWithTheSameValues) {
  const int64_t n = 300001;  // many grains, and not a multiple of any chunk size
  expect_same_with_one_and_two_threads([&] {
    st::Generator gen(17);
    return st::rand({n}, gen);
  });
  expect_same_with_one_and_two_threads([&] {
    st::Generator gen(17);
    return st::randn({n}, gen, st::kFloat64);
  });
  expect_same_with_one_and_two_threads([&] {
    st::Generator gen(17);
    return st::randint(-50, 50, {n}, gen);
  });
  expect_same_with_one_and_two_threads([&] {
    st::Generator gen(17);
    return st::bernoulli(st::full({n}, 0.3), gen);
  });
  expect_same_with_one_and_two_threads([&] {
    st::Generator gen(17);
    return st::normal(st::zeros({n / 7 + 1, 1}), st::ones({7}), gen);
  });
}

TEST_F(ThreadCount, ParallelValuesMatchTheCounterContract) {
  const int64_t n = 200000;
  st::cpu::set_num_threads(2);
  st::Generator gen(23);
  const std::vector<float> values = st::rand({n}, gen).to_vector<float>();
  for (int64_t i : {int64_t{0}, int64_t{8191}, int64_t{8192}, int64_t{65537}, n - 1}) {
    const Block w = plain_words(23, static_cast<uint64_t>(i));
    EXPECT_EQ(values[i], static_cast<float>(w[0] >> 8) / 16777216.0f) << "element " << i;
  }
}

// ---- inputs of bernoulli and normal ------------------------------------------------

// A view of base's storage with the given geometry (independent of the view ops).
st::Tensor strided_view(const st::Tensor& base, std::vector<int64_t> sizes,
                        std::vector<int64_t> strides) {
  return st::Tensor(st::make_intrusive<st::TensorImpl>(base.impl()->storage(), base.dtype(), sizes,
                                                       strides, base.storage_offset()));
}

TEST(RandomOps, BernoulliComparesTheStreamsUniformsWithP) {
  // p transposed: a [3, 5] view of a row-major [5, 3] buffer.
  std::vector<double> buffer(15);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<double>(i) / 14.0;
  const st::Tensor base = st::tensor(buffer, {5, 3});
  const st::Tensor p = strided_view(base, {3, 5}, {1, 3});
  st::Generator gen(31), same(31);
  const std::vector<double> draws = st::bernoulli(p, gen).to_vector<double>();
  const std::vector<double> uniforms = st::rand({3, 5}, same, st::kFloat64).to_vector<double>();
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 5; ++c) {
      const double prob = buffer[c * 3 + r];
      EXPECT_EQ(draws[r * 5 + c], uniforms[r * 5 + c] < prob ? 1.0 : 0.0) << r << "," << c;
    }
  }
  EXPECT_EQ(draws[0], 0.0);   // p = 0 never fires
  EXPECT_EQ(draws[14], 1.0);  // p = 1 always does
}

TEST(RandomOps, NormalBroadcastsMeanAndStd) {
  const st::Tensor mean = st::tensor(std::vector<float>{-1, 0, 10}, {3, 1});
  // std expanded: one stored value seen as [1, 4] through stride 0.
  const st::Tensor std_base = st::tensor(std::vector<float>{2.5f}, {1});
  const st::Tensor std_dev = strided_view(std_base, {1, 4}, {0, 0});
  st::Generator gen(41), same(41);
  const std::vector<float> out = st::normal(mean, std_dev, gen).to_vector<float>();
  const std::vector<float> z = st::randn({3, 4}, same).to_vector<float>();
  const float means[] = {-1, 0, 10};
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      const float expected = means[r] + 2.5f * z[r * 4 + c];
      EXPECT_NEAR(out[r * 4 + c], expected, 1e-5f * (1 + std::abs(expected)));
    }
  }
}

// ---- statistics --------------------------------------------------------------------

struct Moments {
  double mean = 0, variance = 0, min = 0, max = 0;
};

Moments moments_of(const std::vector<double>& v) {
  Moments m;
  m.min = *std::min_element(v.begin(), v.end());
  m.max = *std::max_element(v.begin(), v.end());
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= static_cast<double>(v.size());
  return m;
}

constexpr int64_t kSamples = 1000000;

TEST(RandomStatistics, RandIsUniformOnZeroOne) {
  for (st::ScalarType dtype : {st::kFloat32, st::kFloat64}) {
    st::Generator gen(1001);
    const Moments m = moments_of(st::rand({kSamples}, gen, dtype).to_vector<double>());
    EXPECT_GE(m.min, 0.0);
    EXPECT_LT(m.max, 1.0);
    EXPECT_NEAR(m.mean, 0.5, 2e-3);
    EXPECT_NEAR(m.variance, 1.0 / 12.0, 2e-3);
  }
}

TEST(RandomStatistics, RandnIsStandardNormal) {
  for (st::ScalarType dtype : {st::kFloat32, st::kFloat64}) {
    st::Generator gen(1002);
    const std::vector<double> v = st::randn({kSamples}, gen, dtype).to_vector<double>();
    const Moments m = moments_of(v);
    EXPECT_NEAR(m.mean, 0.0, 5e-3);
    EXPECT_NEAR(m.variance, 1.0, 1e-2);
    const double within_one = static_cast<double>(std::count_if(
                                  v.begin(), v.end(), [](double x) { return std::abs(x) < 1; })) /
                              static_cast<double>(v.size());
    EXPECT_NEAR(within_one, 0.682689, 3e-3);
  }
}

TEST(RandomStatistics, NormalHasTheGivenMeanAndStd) {
  st::Generator gen(1003);
  const std::vector<double> v =
      st::normal(st::full({kSamples}, 3.0, st::kFloat64), st::full({1}, 2.0, st::kFloat64), gen)
          .to_vector<double>();
  const Moments m = moments_of(v);
  EXPECT_NEAR(m.mean, 3.0, 1e-2);
  EXPECT_NEAR(m.variance, 4.0, 4e-2);
}

TEST(RandomStatistics, RandintCoversExactlyLowToHigh) {
  st::Generator gen(1004);
  const std::vector<double> v = st::randint(-3, 4, {kSamples}, gen).to_vector<double>();
  std::map<double, int64_t> counts;
  for (double x : v) ++counts[x];
  ASSERT_EQ(counts.size(), 7u);
  EXPECT_EQ(counts.begin()->first, -3.0);
  EXPECT_EQ(counts.rbegin()->first, 3.0);
  for (const auto& [value, count] : counts) {
    EXPECT_NEAR(static_cast<double>(count) / kSamples, 1.0 / 7.0, 3e-3) << "value " << value;
  }
}

TEST(RandomStatistics, RandintExtremeRange) {
  st::Generator gen(1005);
  const int64_t low = std::numeric_limits<int64_t>::min(),
                high = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> v = st::randint(low, high, {10000}, gen).to_vector<int64_t>();
  const int64_t negatives = std::count_if(v.begin(), v.end(), [](int64_t x) { return x < 0; });
  EXPECT_NEAR(static_cast<double>(negatives) / 10000.0, 0.5, 0.03);
  EXPECT_TRUE(std::none_of(v.begin(), v.end(), [&](int64_t x) { return x == high; }));
}

TEST(RandomStatistics, BernoulliFrequencyMatchesP) {
  for (double p : {0.0, 0.1, 0.5, 0.93, 1.0}) {
    st::Generator gen(1006);
    const std::vector<double> v = st::bernoulli(st::full({kSamples}, p), gen).to_vector<double>();
    double ones = 0;
    for (double x : v) {
      ASSERT_TRUE(x == 0.0 || x == 1.0);
      ones += x;
    }
    EXPECT_NEAR(ones / kSamples, p, 2e-3) << "p = " << p;
  }
}

}  // namespace
