// st::dist::Group under mpirun (1, 2 or 3 ranks): every collective against the
// same computation done in one process, and the errors every rank must see.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <tuple>
#include <vector>

#include "tests/distributed/dist_test_support.h"

namespace st = strata;
using dist_test::Params;

namespace {

st::dist::Group world() {
  static const st::dist::Group group = st::dist::init();
  return group;
}

// Rank r's tree: values that differ by rank, in three dtypes and several shapes.
Params tree_of_rank(int r) {
  st::Generator gen(100 + static_cast<uint64_t>(r));
  return {{"f32", st::randn({3, 5}, gen, st::kFloat32)},
          {"f64", st::randn({7}, gen, st::kFloat64)},
          {"i64", st::randint(-5, 5, {2, 2}, gen)},
          {"scalar", st::full({}, 1.5 * (r + 1), st::kFloat64)},
          {"empty", st::zeros({0, 3})}};
}

// The sum over all ranks' trees, computed here alone.
Params sum_over_ranks(int size) {
  Params sum = tree_of_rank(0);
  for (int r = 1; r < size; ++r) {
    for (auto& [name, t] : sum) t = t + tree_of_rank(r).at(name);
  }
  return sum;
}

void expect_equal(const Params& got, const Params& expected, double tolerance) {
  for (const auto& [name, t] : expected) {
    SCOPED_TRACE(name);
    EXPECT_EQ(got.at(name).dtype(), t.dtype());
    ASSERT_EQ(got.at(name).sizes().size(), t.sizes().size());
    if (t.numel() > 0) {
      EXPECT_LE(dist_test::relative_difference(got.at(name).to(st::kFloat64), t.to(st::kFloat64)),
                tolerance);
    }
  }
}

TEST(Group, RanksAreDistinctAndCoverTheGroup) {
  const st::dist::Group g = world();
  ASSERT_GE(g.rank(), 0);
  ASSERT_LT(g.rank(), g.size());
  st::Tensor one_hot = st::zeros({g.size()}, st::kInt64);
  one_hot.select(0, g.rank()).fill_(1);
  g.all_reduce(one_hot);
  EXPECT_EQ(one_hot.to_vector<int64_t>(), std::vector<int64_t>(static_cast<size_t>(g.size()), 1));
}

TEST(Group, AllReduceSumsEveryLeafOfAMap) {
  const st::dist::Group g = world();
  const Params mine = tree_of_rank(g.rank());
  g.all_reduce(mine);
  expect_equal(mine, sum_over_ranks(g.size()), 1e-6);
  EXPECT_EQ(mine.at("i64").to_vector<int64_t>(),
            sum_over_ranks(g.size()).at("i64").to_vector<int64_t>());
}

TEST(Group, AllReduceTakesVectorsTuplesAndConstants) {
  const st::dist::Group g = world();
  std::tuple<std::vector<st::Tensor>, double, st::Tensor> tree{
      {st::full({2}, 1.0 * g.rank()), st::full({3}, 2.0, st::kFloat64)}, 4.0,
      st::full({}, 1, st::kInt64)};
  g.all_reduce(tree);
  const double ranks_sum = g.size() * (g.size() - 1) / 2.0;
  EXPECT_EQ(std::get<0>(tree)[0].to_vector<double>(), std::vector<double>(2, ranks_sum));
  EXPECT_EQ(std::get<0>(tree)[1].to_vector<double>(), std::vector<double>(3, 2.0 * g.size()));
  EXPECT_EQ(std::get<1>(tree), 4.0);
  EXPECT_EQ(std::get<2>(tree).item<int64_t>(), g.size());
}

// Views into larger tensors: only their elements change, in place.
TEST(Group, AllReduceWritesThroughNonContiguousViews) {
  const st::dist::Group g = world();
  const double rank_factor = g.rank() + 1.0;
  const st::Tensor a = st::arange(24, st::kFloat64).reshape({4, 6}) * rank_factor;
  const st::Tensor b = st::arange(12, st::kFloat32).reshape({3, 4}) * rank_factor;
  g.all_reduce(std::vector<st::Tensor>{a.t(), b.narrow(1, 1, 2), b.select(1, 0)});
  const double sum_factor = g.size() * (g.size() + 1) / 2.0;
  const st::Tensor b_base = st::arange(12, st::kFloat32).reshape({3, 4});
  EXPECT_LE(dist_test::relative_difference(a, st::arange(24, st::kFloat64).reshape({4, 6}) * sum_factor),
            1e-12);
  EXPECT_LE(dist_test::relative_difference(b.narrow(1, 0, 3), b_base.narrow(1, 0, 3) * sum_factor),
            1e-6);
  // Column 3 was in no leaf: untouched.
  EXPECT_EQ(b.select(1, 3).to_vector<double>(), (b_base.select(1, 3) * rank_factor).to_vector<double>());
}

// Tiny buckets and a small direct threshold (many messages), one bucket, no
// signature check: the same sums.
TEST(Group, AllReduceGivesTheSameSumsWithAnyBucketing) {
  st::dist::Group g = world();
  const st::dist::CollectiveOptions saved = g.options();
  for (const st::dist::CollectiveOptions options :
       {st::dist::CollectiveOptions{64, 256}, st::dist::CollectiveOptions{1 << 20, 1 << 30},
        st::dist::CollectiveOptions{8, 8}, st::dist::CollectiveOptions{64, 256, false}}) {
    g.set_options(options);
    const Params mine = tree_of_rank(g.rank());
    g.all_reduce(mine);
    expect_equal(mine, sum_over_ranks(g.size()), 1e-6);
  }
  g.set_options(saved);
}

TEST(Group, AllReduceOfALargeLeafInPlace) {
  const st::dist::Group g = world();
  const int64_t n = int64_t{1} << 20;  // 4 MB of Float32: a message of its own
  const st::Tensor big = st::full({n}, 1.0 + g.rank(), st::kFloat32);
  const void* before = big.data_ptr();
  g.all_reduce(big);
  EXPECT_EQ(big.data_ptr(), before);
  const double expected = g.size() * (g.size() + 1) / 2.0;
  EXPECT_EQ(big.amin().item<double>(), expected);
  EXPECT_EQ(big.amax().item<double>(), expected);
}

TEST(Group, BroadcastCopiesTheRootsLeavesToEveryRank) {
  const st::dist::Group g = world();
  for (int root = 0; root < g.size(); ++root) {
    SCOPED_TRACE(root);
    const Params mine = tree_of_rank(g.rank());
    const st::Tensor flags = st::tensor(std::vector<double>{1.0 * g.rank(), 0.0}, {2}) > 0.5;
    const st::Tensor matrix = st::arange(6, st::kFloat64).reshape({2, 3}) * (g.rank() + 1.0);
    std::tuple<Params, st::Tensor, st::Tensor> tree{mine, flags, matrix.t()};
    g.broadcast(tree, root);
    expect_equal(mine, tree_of_rank(root), 0.0);
    EXPECT_EQ(flags.to_vector<int64_t>(), (std::vector<int64_t>{root > 0 ? 1 : 0, 0}));
    EXPECT_EQ(matrix.to_vector<double>(),
              (st::arange(6, st::kFloat64).reshape({2, 3}) * (root + 1.0)).to_vector<double>());
  }
}

TEST(Group, BarrierReturnsOnEveryRank) {
  world().barrier();
  world().barrier();
}

// Errors every rank must see alike (Note [Collective signatures]), after which
// the group still works.
TEST(Group, DifferentTreesOnDifferentRanksAreAnErrorEverywhere) {
  const st::dist::Group g = world();
  if (g.size() == 1) GTEST_SKIP() << "needs two ranks";
  const st::Tensor t = st::zeros({g.rank() == 1 ? 3 : 2});
  const std::string message = dist_test::error_of([&] { g.all_reduce(t); });
  EXPECT_NE(message.find("[dist::all_reduce] the ranks were given different trees"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Float32[" + std::to_string(g.rank() == 1 ? 3 : 2) + "]"),
            std::string::npos)
      << message;
  const st::Tensor ok = st::ones({2});
  g.all_reduce(ok);
  EXPECT_EQ(ok.to_vector<double>(), std::vector<double>(2, g.size()));
}

// A tree every rank agreed on is remembered and later calls with it skip the
// wait for the vote (Note [Collective signatures]); a rank that then passes
// another tree, or a leaf it cannot use, is still an error on every rank.
TEST(Group, ARepeatedTreeSumsAndAnotherTreeAfterItIsAnErrorEverywhere) {
  const st::dist::Group g = world();
  if (g.size() == 1) GTEST_SKIP() << "needs two ranks";
  const double w = g.size();
  const st::Tensor a = st::ones({4});
  const st::Tensor small = st::ones({3}, st::kFloat64);
  const std::vector<st::Tensor> tree = {a, small.narrow(0, 1, 2)};
  g.all_reduce(tree);
  g.all_reduce(tree);
  EXPECT_EQ(a.to_vector<double>(), std::vector<double>(4, w * w));
  EXPECT_EQ(small.to_vector<double>(), (std::vector<double>{1, w * w, w * w}));

  const std::vector<st::Tensor> other = {st::ones({4}), st::ones({3}, st::kFloat64)};
  std::string message = dist_test::error_of([&] { g.all_reduce(g.rank() == 1 ? other : tree); });
  EXPECT_NE(message.find("the ranks were given different trees"), std::string::npos) << message;

  g.all_reduce(tree);  // remembered again
  const std::vector<st::Tensor> undefined = {st::Tensor(), small.narrow(0, 1, 2)};
  message = dist_test::error_of([&] { g.all_reduce(g.rank() == 1 ? undefined : tree); });
  EXPECT_NE(message.find(g.rank() == 1 ? "leaf 0 is an undefined tensor"
                                       : "another rank was given leaves it cannot use"),
            std::string::npos)
      << message;

  const st::Tensor ok = st::ones({2});
  g.all_reduce(ok);
  g.all_reduce(ok);
  EXPECT_EQ(ok.to_vector<double>(), std::vector<double>(2, w * w));
}

TEST(Group, ALeafOnlyOneRankCannotUseIsAnErrorEverywhere) {
  const st::dist::Group g = world();
  const std::vector<st::Tensor> leaves = {g.rank() == 0 ? st::Tensor() : st::zeros({2})};
  const std::string message = dist_test::error_of([&] { g.all_reduce(leaves); });
  if (g.rank() == 0) {
    EXPECT_NE(message.find("leaf 0 is an undefined tensor"), std::string::npos) << message;
  } else {
    EXPECT_NE(message.find("another rank was given leaves it cannot use"), std::string::npos)
        << message;
  }
}

TEST(Group, BoolLeavesCannotBeSummed) {
  const std::string message =
      dist_test::error_of([] { world().all_reduce(st::zeros({2}) > 1.0); });
  EXPECT_NE(message.find("leaf 0 is Bool"), std::string::npos) << message;
}

TEST(Group, ARootOutsideTheGroupIsAnError) {
  const st::dist::Group g = world();
  const std::string message =
      dist_test::error_of([&] { g.broadcast(st::zeros({2}), g.size()); });
  EXPECT_NE(message.find("is not a rank of a group of"), std::string::npos) << message;
}

TEST(Group, TensorsOfATransformAreRefused) {
  const st::dist::Group g = world();
  const st::Tensor xs = st::ones({3, 2});
  const std::string message = dist_test::error_of([&] {
    st::vmap([&](const st::Tensor& x) {
      g.all_reduce(x);
      return x;
    })(xs);
  });
  EXPECT_NE(message.find("tensor of a transform"), std::string::npos) << message;
  const std::string under_grad = dist_test::error_of([&] {
    st::grad([&](const st::Tensor& x) {
      g.all_reduce(x);
      return x.sum();
    })(xs);
  });
  EXPECT_NE(under_grad.find("tensor of a transform"), std::string::npos) << under_grad;
}

}  // namespace

// CUDA leaves over NCCL (Note [NCCL for CUDA leaves]): rank r on GPU r. NCCL
// takes one GPU per rank, so these need a device for every rank.
#ifdef STRATA_TEST_NCCL
#define REQUIRE_GPU_PER_RANK(g)                                                            \
  do {                                                                                     \
    if (st::cuda_device_count() < (g).size()) {                                            \
      GTEST_SKIP() << "needs one CUDA device per rank (" << (g).size() << "); this machine " \
                   << "has " << st::cuda_device_count();                                   \
    }                                                                                      \
  } while (0)

Params on(const Params& tree, st::Device device) {
  return st::tree::map(tree, [device](const st::Tensor& t) { return t.to(device); });
}

TEST(GroupCuda, AllReduceOfCudaLeavesEqualsTheSumOnTheCpu) {
  const st::dist::Group g = world();
  REQUIRE_GPU_PER_RANK(g);
  const Params mine = on(tree_of_rank(g.rank()), st::cuda(g.rank()));
  for (int call = 1; call <= 2; ++call) {  // the second call takes the remembered plan
    SCOPED_TRACE(call);
    g.all_reduce(mine);
    EXPECT_EQ(mine.at("f32").device(), st::cuda(g.rank()));
    Params expected = sum_over_ranks(g.size());
    if (call == 2) {
      for (auto& [name, t] : expected) t = t * static_cast<int64_t>(g.size());
    }
    expect_equal(on(mine, st::kCPU), expected, 1e-6);
    EXPECT_EQ(mine.at("i64").to_vector<int64_t>(), expected.at("i64").to_vector<int64_t>());
  }
}

// CPU leaves go over MPI and CUDA ones over NCCL in the same call; views are
// written in place, and a large contiguous leaf is reduced where it lies.
TEST(GroupCuda, AMixedTreeWithViewsSumsEveryLeafInPlace) {
  const st::dist::Group g = world();
  REQUIRE_GPU_PER_RANK(g);
  const st::Device gpu = st::cuda(g.rank());
  const double rank_factor = g.rank() + 1.0;
  const double sum_factor = g.size() * (g.size() + 1) / 2.0;
  const st::Tensor host = st::arange(12, st::kFloat64).reshape({3, 4}) * rank_factor;
  const st::Tensor matrix = (st::arange(24, st::kFloat32).reshape({4, 6}) * rank_factor).to(gpu);
  const st::Tensor big = st::full({int64_t{1} << 20}, rank_factor, st::kFloat32, gpu);
  const void* big_data = big.data_ptr();
  g.all_reduce(std::vector<st::Tensor>{host, matrix.t(), matrix.select(1, 0), big});
  EXPECT_EQ(host.to_vector<double>(),
            (st::arange(12, st::kFloat64).reshape({3, 4}) * sum_factor).to_vector<double>());
  // matrix.t() covers every element once and column 0 a second time.
  st::Tensor expected = st::arange(24, st::kFloat32).reshape({4, 6}) * sum_factor;
  expected.select(1, 0).copy_(st::arange(0, 24, 6, st::kFloat32) * (sum_factor * g.size()));
  EXPECT_LE(dist_test::relative_difference(matrix.to(st::kCPU), expected), 1e-6);
  EXPECT_EQ(big.data_ptr(), big_data);
  EXPECT_EQ(big.amin().item<double>(), sum_factor);
  EXPECT_EQ(big.amax().item<double>(), sum_factor);
}

TEST(GroupCuda, BroadcastCopiesTheRootsCudaLeaves) {
  const st::dist::Group g = world();
  REQUIRE_GPU_PER_RANK(g);
  const st::Device gpu = st::cuda(g.rank());
  for (int root = 0; root < g.size(); ++root) {
    SCOPED_TRACE(root);
    const Params mine = on(tree_of_rank(g.rank()), gpu);
    const st::Tensor flags =
        (st::tensor(std::vector<double>{1.0 * g.rank(), 0.0}, {2}) > 0.5).to(gpu);
    g.broadcast(std::tuple<Params, st::Tensor>{mine, flags}, root);
    expect_equal(on(mine, st::kCPU), tree_of_rank(root), 0.0);
    EXPECT_EQ(flags.to_vector<int64_t>(), (std::vector<int64_t>{root > 0 ? 1 : 0, 0}));
  }
}

// A rank reduces on one GPU; a leaf on another one is refused on every rank
// before any data moves.
TEST(GroupCuda, ALeafOnASecondGpuIsAnErrorEverywhere) {
  const st::dist::Group g = world();
  REQUIRE_GPU_PER_RANK(g);
  if (st::cuda_device_count() < 2) GTEST_SKIP() << "needs a second CUDA device";
  const st::Device gpu = st::cuda(g.rank());
  const st::Device other = st::cuda((g.rank() + 1) % st::cuda_device_count());  // never gpu
  const st::Tensor first = st::ones({4}, st::kFloat32, gpu);
  g.all_reduce(first);  // makes this rank's communicator on `gpu`
  const std::string error = dist_test::error_of(
      [&] { g.all_reduce(std::vector<st::Tensor>{st::ones({4}, st::kFloat32, other)}); });
  EXPECT_NE(error.find("NCCL communicator is on"), std::string::npos) << error;
}
#endif
