// The elementwise kernels give the same bits however the driver cuts their range:
// with TBB limited to 1 thread or to 2, at any offset of a slice, in a strided row
// (Note [One code path per element] in kernels/cpu/elementwise_rows.h). The
// differential fuzzer found exp, sigmoid and float32 sin differing in the last bit
// on 1 to 3 elements in 65K between 1 and 2 threads.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace st = strata;

namespace {

struct Unary {
  const char* name;
  std::function<st::Tensor(const st::Tensor&)> fn;
  bool positive_domain;  // log, sqrt, ...: inputs in (0.01, 8]
};

const std::vector<Unary>& unary_ops() {
  static const std::vector<Unary> ops = {
      {"exp", [](const st::Tensor& x) { return x.exp(); }, false},
      {"expm1", [](const st::Tensor& x) { return x.expm1(); }, false},
      {"sigmoid", [](const st::Tensor& x) { return x.sigmoid(); }, false},
      {"sin", [](const st::Tensor& x) { return x.sin(); }, false},
      {"cos", [](const st::Tensor& x) { return x.cos(); }, false},
      {"tanh", [](const st::Tensor& x) { return x.tanh(); }, false},
      {"gelu", [](const st::Tensor& x) { return x.gelu(); }, false},
      {"gelu tanh", [](const st::Tensor& x) { return st::nn::gelu(x, "tanh"); }, false},
      {"silu", [](const st::Tensor& x) { return x.silu(); }, false},
      {"log", [](const st::Tensor& x) { return x.log(); }, true},
      {"log1p", [](const st::Tensor& x) { return x.log1p(); }, true},
      {"sqrt", [](const st::Tensor& x) { return x.sqrt(); }, true},
      {"rsqrt", [](const st::Tensor& x) { return x.rsqrt(); }, true},
      {"pow 1.7", [](const st::Tensor& x) { return x.pow(1.7); }, true},
      {"binary arithmetic", [](const st::Tensor& x) { return (x * x.tanh() + x) / (x.square() + 1.0); },
       false},
  };
  return ops;
}

// n values, uniform in [-6, 6] or (0.01, 8].
st::Tensor random_values(int64_t n, bool positive, st::ScalarType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(positive ? 0.01 : -6.0, positive ? 8.0 : 6.0);
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) v = dist(rng);
  return st::tensor(values, {n}).to(dtype);
}

class ThreadLimit {
 public:
  explicit ThreadLimit(int threads) { st::cpu::set_num_threads(threads); }
  ~ThreadLimit() { st::cpu::set_num_threads(0); }
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;
};

// The index of the first element whose bits differ, or -1.
int64_t first_difference(const st::Tensor& a, const st::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  EXPECT_EQ(a.dtype(), b.dtype());
  const st::Tensor ca = a.contiguous(), cb = b.contiguous();
  const int64_t size = st::element_size(a.dtype());
  const char* pa = static_cast<const char*>(ca.data_ptr());
  const char* pb = static_cast<const char*>(cb.data_ptr());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(pa + i * size, pb + i * size, static_cast<size_t>(size)) != 0) return i;
  }
  return -1;
}

std::string where(const Unary& op, st::ScalarType dtype, int64_t n, int64_t offset) {
  return std::string(op.name) + " " + st::to_string(dtype) + " n=" + std::to_string(n) +
         " offset=" + std::to_string(offset);
}

// Sizes past two and three of the driver's grains, none a multiple of a packet.
const std::vector<int64_t> kSizes = {2 * st::cpu::kElementwiseGrain + 1,
                                     2 * st::cpu::kElementwiseGrain + 13,
                                     3 * st::cpu::kElementwiseGrain + 7, 100003};

TEST(ElementwiseSplit, OneThreadAndTwoGiveTheSameBits) {
  for (const Unary& op : unary_ops()) {
    for (st::ScalarType dtype : {st::kFloat32, st::kFloat64}) {
      for (int64_t n : kSizes) {
        const st::Tensor base = random_values(n + 8, op.positive_domain, dtype, n);
        // Offsets that leave the slice's start off every packet boundary.
        for (int64_t offset : {0, 1, 3, 5}) {
          const st::Tensor x = base.slice(0, offset, offset + n);
          st::Tensor one, two;
          {
            const ThreadLimit limit(1);
            one = op.fn(x);
          }
          {
            const ThreadLimit limit(2);
            two = op.fn(x);
          }
          EXPECT_EQ(first_difference(one, two), -1) << where(op, dtype, n, offset);
        }
      }
    }
  }
}

// Where an element sits (its offset from an aligned address, its place in a
// packet, a strided or a broadcast row) does not change its bits either: the
// results of a slice are the slice of the results.
TEST(ElementwiseSplit, AnElementsBitsDoNotDependOnItsPlace) {
  const int64_t n = 1000;
  for (const Unary& op : unary_ops()) {
    for (st::ScalarType dtype : {st::kFloat32, st::kFloat64}) {
      const st::Tensor x = random_values(2 * n + 8, op.positive_domain, dtype, 7);
      const st::Tensor whole = op.fn(x);
      for (int64_t offset : {1, 2, 3, 7}) {
        EXPECT_EQ(first_difference(op.fn(x.slice(0, offset, offset + n)),
                                   whole.slice(0, offset, offset + n)),
                  -1)
            << where(op, dtype, n, offset) << " (slice)";
      }
      EXPECT_EQ(first_difference(op.fn(x.slice(0, 1, std::nullopt, 2)),
                                 whole.slice(0, 1, std::nullopt, 2)),
                -1)
          << where(op, dtype, n, 1) << " (step 2)";
      const st::Tensor one = x.slice(0, 5, 6);
      EXPECT_EQ(first_difference(op.fn(one.expand({37})), whole.slice(0, 5, 6).expand({37})), -1)
          << where(op, dtype, 37, 5) << " (broadcast)";
    }
  }
}

// In place too: exp_ on a slice of a large tensor, 1 thread vs 2.
TEST(ElementwiseSplit, InPlaceOnASliceGivesTheSameBits) {
  const int64_t n = 2 * st::cpu::kElementwiseGrain + 3;
  for (st::ScalarType dtype : {st::kFloat32, st::kFloat64}) {
    const st::Tensor base = random_values(n + 4, false, dtype, 11);
    st::Tensor one = base.clone(), two = base.clone();
    {
      const ThreadLimit limit(1);
      one.slice(0, 3, 3 + n).exp_();
      one.slice(0, 1, 1 + n).sigmoid_();
    }
    {
      const ThreadLimit limit(2);
      two.slice(0, 3, 3 + n).exp_();
      two.slice(0, 1, 1 + n).sigmoid_();
    }
    EXPECT_EQ(first_difference(one, two), -1) << st::to_string(dtype);
  }
}

}  // namespace
