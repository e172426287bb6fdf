#include "distributed/dp/rdp_accountant.h"

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace strata::dp {

namespace {

constexpr char kTag[] = "dp::rdp";
constexpr double kInf = std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)) and log(exp(a) - exp(b)) (a >= b); -inf stands for 0.
double log_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == -kInf) return a;
  return a + std::log1p(std::exp(b - a));
}

double log_sub(double a, double b) {
  STRATA_CHECK(a >= b, kTag, "the series of a fractional order went negative");
  if (b == -kInf) return a;
  if (a == b) return -kInf;
  return b + std::log(std::expm1(a - b));
}

// log(erfc(x)), also where erfc(x) underflows: for large x by the asymptotic
// series erfc(x) = exp(-x^2) / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(2x^2)^2 - ...),
// whose next term is below 1e-15 of the sum from x = 25 on.
double log_erfc(double x) {
  if (x < 25) return std::log(std::erfc(x));
  const double t = 1 / (2 * x * x);
  const double series = 1 - t * (1 - 3 * t * (1 - 5 * t * (1 - 7 * t)));
  return -x * x - std::log(x) - 0.5 * std::log(M_PI) + std::log(series);
}

// log A_alpha for an integer order: A_alpha = sum_{i=0..alpha} C(alpha, i)
// q^i (1 - q)^(alpha - i) exp((i^2 - i) / (2 sigma^2)) (Mironov et al. 2019, 3.3).
double log_a_integer(double q, double sigma, int64_t alpha) {
  double log_a = -kInf;
  const double a = static_cast<double>(alpha);
  for (int64_t k = 0; k <= alpha; ++k) {
    const double i = static_cast<double>(k);
    const double log_binomial = std::lgamma(a + 1) - std::lgamma(i + 1) - std::lgamma(a - i + 1);
    log_a = log_add(log_a, log_binomial + i * std::log(q) + (a - i) * std::log1p(-q) +
                               (i * i - i) / (2 * sigma * sigma));
  }
  return log_a;
}

// log A_alpha for a fractional order: the integral split at
// z0 = sigma^2 log(1/q - 1) + 1/2 into two series of generalised binomial terms
// (signed, since C(alpha, i) changes sign for i > alpha), summed in log space
// until both terms fall below e^-30 (Mironov et al. 2019, 3.3).
double log_a_fractional(double q, double sigma, double alpha) {
  const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
  const double root2_sigma = std::sqrt(2.0) * sigma;
  double log_a0 = -kInf, log_a1 = -kInf;
  double log_binomial = 0;  // log |C(alpha, i)|
  bool positive = true;     // sign of C(alpha, i)
  for (int64_t k = 0;; ++k) {
    STRATA_CHECK(k < 1000000, kTag, "the series for order ", alpha, " did not converge");
    const double i = static_cast<double>(k);
    const double j = alpha - i;
    const double log_s0 = log_binomial + i * std::log(q) + j * std::log1p(-q) +
                          (i * i - i) / (2 * sigma * sigma) + std::log(0.5) +
                          log_erfc((i - z0) / root2_sigma);
    const double log_s1 = log_binomial + j * std::log(q) + i * std::log1p(-q) +
                          (j * j - j) / (2 * sigma * sigma) + std::log(0.5) +
                          log_erfc((z0 - j) / root2_sigma);
    if (positive) {
      log_a0 = log_add(log_a0, log_s0);
      log_a1 = log_add(log_a1, log_s1);
    } else {
      log_a0 = log_sub(log_a0, log_s0);
      log_a1 = log_sub(log_a1, log_s1);
    }
    if (std::max(log_s0, log_s1) < -30) break;
    // C(alpha, i + 1) = C(alpha, i) (alpha - i) / (i + 1).
    log_binomial += std::log(std::abs(alpha - i)) - std::log(i + 1);
    if (alpha - i < 0) positive = !positive;
  }
  return log_add(log_a0, log_a1);
}

}  // namespace

std::vector<double> default_orders() {
  std::vector<double> orders;
  for (int x = 1; x < 100; ++x) orders.push_back(1 + x / 10.0);
  for (int x = 12; x < 64; ++x) orders.push_back(x);
  return orders;
}

double sampled_gaussian_rdp(double q, double sigma, double order) {
  STRATA_CHECK(q >= 0 && q <= 1, kTag, "sample rate ", q, " is not in [0, 1]");
  STRATA_CHECK(sigma >= 0, kTag, "noise multiplier ", sigma, " is negative");
  STRATA_CHECK(order > 1, kTag, "order ", order, " is not above 1");
  if (q == 0) return 0;
  if (sigma == 0 || std::isinf(order)) return kInf;
  if (q == 1) return order / (2 * sigma * sigma);
  const double log_a = order == std::floor(order) && order < 1e6
                           ? log_a_integer(q, sigma, static_cast<int64_t>(order))
                           : log_a_fractional(q, sigma, order);
  return log_a / (order - 1);
}

PrivacySpent rdp_to_dp(const std::vector<double>& orders, const std::vector<double>& rdp,
                       double delta) {
  STRATA_CHECK(orders.size() == rdp.size() && !orders.empty(), "dp::rdp_to_dp", orders.size(),
               " orders and ", rdp.size(), " RDP values");
  STRATA_CHECK(delta > 0 && delta < 1, "dp::rdp_to_dp", "delta ", delta, " is not in (0, 1)");
  PrivacySpent best{kInf, std::nan("")};
  for (size_t k = 0; k < orders.size(); ++k) {
    const double a = orders[k];
    STRATA_CHECK(a > 1, "dp::rdp_to_dp", "order ", a, " is not above 1");
    // Balle et al. 2020, Theorem 21.
    const double eps = rdp[k] - (std::log(delta) + std::log(a)) / (a - 1) + std::log((a - 1) / a);
    if (eps < best.epsilon) best = {eps, a};
  }
  return best;
}

RdpAccountant::RdpAccountant(std::vector<double> orders) : orders_(std::move(orders)) {
  STRATA_CHECK(!orders_.empty(), "dp::RdpAccountant", "no orders");
}

void RdpAccountant::step(double noise_multiplier, double sample_rate, int64_t steps) {
  STRATA_CHECK(steps >= 0, "dp::RdpAccountant::step", "steps ", steps, " is negative");
  if (!runs_.empty() && runs_.back().noise_multiplier == noise_multiplier &&
      runs_.back().sample_rate == sample_rate) {
    runs_.back().steps += steps;
  } else {
    runs_.push_back({noise_multiplier, sample_rate, steps});
  }
}

std::vector<double> RdpAccountant::rdp() const {
  std::vector<double> total(orders_.size(), 0.0);
  for (const Run& run : runs_) {
    if (run.steps == 0) continue;
    for (size_t k = 0; k < orders_.size(); ++k) {
      total[k] += static_cast<double>(run.steps) *
                  sampled_gaussian_rdp(run.sample_rate, run.noise_multiplier, orders_[k]);
    }
  }
  return total;
}

PrivacySpent RdpAccountant::privacy_spent(double delta) const {
  int64_t steps = 0;
  for (const Run& run : runs_) steps += run.steps;
  if (steps == 0) return {0.0, std::nan("")};
  return rdp_to_dp(orders_, rdp(), delta);
}

double epsilon(double q, double sigma, int64_t steps, double delta) {
  RdpAccountant accountant;
  accountant.step(sigma, q, steps);
  return accountant.epsilon(delta);
}

}  // namespace strata::dp
