#pragma once

// Privacy accounting for DP-SGD: the Renyi DP of the sampled Gaussian mechanism
// (Mironov, Talwar and Zhang, "Renyi Differential Privacy of the Sampled
// Gaussian Mechanism", 2019, Section 3.3), composed over steps by adding RDP,
// and converted to (epsilon, delta)-DP by Balle et al., "Hypothesis Testing
// Interpretations and Renyi Differential Privacy", AISTATS 2020, Theorem 21.
// The same analysis and default orders as Opacus' RDP accountant.

#include <cstdint>
#include <vector>

namespace strata::dp {

// 1.1, 1.2, ..., 10.9, then 12, 13, ..., 63: Opacus' default orders.
std::vector<double> default_orders();

// The RDP at `order` (> 1) of one step of the sampled Gaussian mechanism: each
// record taken with probability q, Gaussian noise of std sigma times the
// sensitivity. Integer orders by the binomial expansion, fractional ones by the
// two-sided series; both in log space. Infinite when sigma is 0.
double sampled_gaussian_rdp(double q, double sigma, double order);

struct PrivacySpent {
  double epsilon;
  double order;  // the order that gave it
};

// The smallest epsilon over the orders for this delta, from RDP values at them.
PrivacySpent rdp_to_dp(const std::vector<double>& orders, const std::vector<double>& rdp,
                       double delta);

// Accumulates steps of (sigma, q) and reports epsilon at a delta.
class RdpAccountant {
 public:
  explicit RdpAccountant(std::vector<double> orders = default_orders());
  void step(double noise_multiplier, double sample_rate, int64_t steps = 1);
  std::vector<double> rdp() const;  // per order, the sum over all steps
  PrivacySpent privacy_spent(double delta) const;
  // epsilon 0 before any step.
  double epsilon(double delta) const { return privacy_spent(delta).epsilon; }

 private:
  struct Run {
    double noise_multiplier;
    double sample_rate;
    int64_t steps;
  };
  std::vector<double> orders_;
  std::vector<Run> runs_;
};

// epsilon after `steps` steps of (q, sigma), at delta, over the default orders.
double epsilon(double q, double sigma, int64_t steps, double delta);

}  // namespace strata::dp
