// The RDP accountant against Opacus' own test value and against the definition
// integrated numerically (tests/distributed/rdp_reference.py, mpmath at 40
// digits), which shares no code path with the series the accountant sums.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cmath>
#include <limits>

#include "tests/distributed/dist_test_support.h"

namespace st = strata;

namespace {

TEST(RdpAccountant, DefaultOrdersAreOpacus) {
  const std::vector<double> orders = st::dp::default_orders();
  ASSERT_EQ(orders.size(), 99u + 52u);
  EXPECT_DOUBLE_EQ(orders.front(), 1.1);
  EXPECT_DOUBLE_EQ(orders[98], 10.9);
  EXPECT_EQ(orders[99], 12.0);
  EXPECT_EQ(orders.back(), 63.0);
}

// One step's RDP at integer and fractional orders. The series stops at terms
// below e^-30, so agreement is to ~1e-13 absolute.
TEST(RdpAccountant, SampledGaussianRdpMatchesTheIntegratedDefinition) {
  struct Case {
    double q, sigma, order, rdp;
  };
  const Case cases[] = {
      {0.01, 1.0, 2.5, 0.00021757533228188046},  {0.01, 1.0, 7, 0.00071364645509635875},
      {0.01, 1.0, 31.7, 11.094824270499131},     {0.1, 0.8, 1.5, 0.023305046249858829},
      {0.1, 0.8, 12, 6.863089326435804},         {256.0 / 60000, 1.1, 10.3, 0.00012938270927966572},
      {0.04, 1.5, 63, 10.729206823144095}};
  for (const Case& c : cases) {
    EXPECT_NEAR(st::dp::sampled_gaussian_rdp(c.q, c.sigma, c.order), c.rdp,
                1e-12 + 1e-12 * c.rdp)
        << "q " << c.q << ", sigma " << c.sigma << ", order " << c.order;
  }
}

TEST(RdpAccountant, EdgeCasesOfTheMechanism) {
  EXPECT_EQ(st::dp::sampled_gaussian_rdp(0.0, 1.0, 2.0), 0.0);
  EXPECT_DOUBLE_EQ(st::dp::sampled_gaussian_rdp(1.0, 2.0, 3.0), 3.0 / 8.0);  // alpha / (2 sigma^2)
  EXPECT_EQ(st::dp::sampled_gaussian_rdp(0.5, 0.0, 2.0), std::numeric_limits<double>::infinity());
  EXPECT_NE(dist_test::error_of([] { st::dp::sampled_gaussian_rdp(0.5, 1.0, 1.0); })
                .find("order 1 is not above 1"),
            std::string::npos);
  EXPECT_NE(dist_test::error_of([] { st::dp::sampled_gaussian_rdp(1.5, 1.0, 2.0); })
                .find("sample rate"),
            std::string::npos);
}

// Opacus' accountant test (opacus/tests/accountants_test.py, test_rdp_accountant):
// sigma 1.5, q 0.04, int(90 / 0.04) = 2250 steps, delta 1e-5 -> 7.32911117143.
// The integrated definition gives 7.3291111714841742 at order 3.9.
TEST(RdpAccountant, EpsilonMatchesOpacusPublishedTestValue) {
  st::dp::RdpAccountant accountant;
  for (int i = 0; i < 2250; ++i) accountant.step(1.5, 0.04);
  const st::dp::PrivacySpent spent = accountant.privacy_spent(1e-5);
  EXPECT_NEAR(spent.epsilon, 7.32911117143, 1e-9);
  EXPECT_DOUBLE_EQ(spent.order, 3.9);
  EXPECT_NEAR(st::dp::epsilon(0.04, 1.5, 2250, 1e-5), 7.3291111714841742, 1e-9);
}

// The MNIST DP-SGD configuration of the TF Privacy tutorial: batch 256 of
// 60000 (q = 256 / 60000), sigma 1.1, 60 epochs = 14062 steps, delta 1e-5; the
// value of the integrated definition with Opacus' orders and conversion.
TEST(RdpAccountant, EpsilonOfTheMnistTutorialConfiguration) {
  const double q = 256.0 / 60000;
  EXPECT_NEAR(st::dp::epsilon(q, 1.1, 14062, 1e-5), 2.5965558689532974, 1e-8);
}

TEST(RdpAccountant, ComposesByAddingRdp) {
  st::dp::RdpAccountant mixed;
  mixed.step(1.0, 0.01, 100);
  mixed.step(2.0, 0.05, 50);
  mixed.step(1.0, 0.01, 100);
  const std::vector<double> orders = st::dp::default_orders();
  std::vector<double> expected(orders.size());
  for (size_t k = 0; k < orders.size(); ++k) {
    expected[k] = 200 * st::dp::sampled_gaussian_rdp(0.01, 1.0, orders[k]) +
                  50 * st::dp::sampled_gaussian_rdp(0.05, 2.0, orders[k]);
  }
  const std::vector<double> got = mixed.rdp();
  for (size_t k = 0; k < orders.size(); ++k) EXPECT_NEAR(got[k], expected[k], 1e-12 * expected[k]);
  EXPECT_DOUBLE_EQ(mixed.epsilon(1e-5), st::dp::rdp_to_dp(orders, expected, 1e-5).epsilon);
}

TEST(RdpAccountant, EpsilonGrowsWithStepsAndShrinksWithNoise) {
  const double q = 0.01;
  EXPECT_EQ(st::dp::RdpAccountant().epsilon(1e-5), 0.0);
  EXPECT_LT(st::dp::epsilon(q, 1.0, 100, 1e-5), st::dp::epsilon(q, 1.0, 1000, 1e-5));
  EXPECT_GT(st::dp::epsilon(q, 1.0, 1000, 1e-5), st::dp::epsilon(q, 2.0, 1000, 1e-5));
  EXPECT_GT(st::dp::epsilon(q, 1.0, 1000, 1e-6), st::dp::epsilon(q, 1.0, 1000, 1e-5));
}

TEST(RdpAccountant, ConversionPicksTheBestOrder) {
  // Balle et al. 2020, Theorem 21, by hand at two orders.
  const std::vector<double> orders = {2.0, 10.0}, rdp = {0.5, 1.0};
  const double delta = 1e-5;
  auto eps = [&](double a, double r) {
    return r - (std::log(delta) + std::log(a)) / (a - 1) + std::log((a - 1) / a);
  };
  const st::dp::PrivacySpent spent = st::dp::rdp_to_dp(orders, rdp, delta);
  EXPECT_DOUBLE_EQ(spent.epsilon, std::min(eps(2.0, 0.5), eps(10.0, 1.0)));
  EXPECT_EQ(spent.order, eps(2.0, 0.5) < eps(10.0, 1.0) ? 2.0 : 10.0);
  EXPECT_NE(dist_test::error_of([&] { st::dp::rdp_to_dp(orders, {1.0}, delta); })
                .find("2 orders and 1 RDP values"),
            std::string::npos);
}

}  // namespace
