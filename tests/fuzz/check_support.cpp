#include "tests/fuzz/check_support.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace strata::fuzz {

Tensor random_tensor(std::mt19937_64& rng, const std::vector<int64_t>& shape, ScalarType dtype) {
  std::normal_distribution<double> normal;
  std::vector<double> values(static_cast<size_t>(num_elements(shape)));
  for (double& v : values) v = normal(rng);
  return tensor(values, shape).to(dtype);
}

std::vector<int64_t> with_batch(const std::vector<int64_t>& shape) {
  std::vector<int64_t> out{kBatch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

ScalarType& checked_dtype() {
  thread_local ScalarType dtype = kFloat64;
  return dtype;
}

std::string Check::run(const Program& p, std::mt19937_64& rng) const {
  checked_dtype() = p.dtype;
  std::string result = body(p, rng);
  checked_dtype() = kFloat64;
  return result;
}

BothRaised& both_raised() {
  thread_local BothRaised counter;
  return counter;
}

Tensor finite_difference_gradient(const std::function<double(const Tensor&)>& f, const Tensor& x) {
  const double eps = kFiniteDifferenceStep;
  std::vector<double> v = x.to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> g;
  for (double& vi : v) {
    const double saved = vi;
    vi = saved + eps;
    const double up = f(tensor(v, x.sizes()));
    vi = saved - eps;
    const double down = f(tensor(v, x.sizes()));
    vi = saved;
    g.push_back((up - down) / (2 * eps));
  }
  return tensor(g, x.sizes());
}

namespace {

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(),
                     static_cast<size_t>(ca.numel() * element_size(ca.dtype()))) == 0;
}

}  // namespace

std::string compare(const char* what, const Tensor& a, const Tensor& b, double tol) {
  std::ostringstream out;
  if (a.sizes() != b.sizes()) {
    out << what << ": shapes " << shape_string(a.sizes()) << " vs " << shape_string(b.sizes());
    return out.str();
  }
  if (a.numel() == 0) return {};
  if (tol > 0 && (a.dtype() == kFloat32 || b.dtype() == kFloat32 || checked_dtype() == kFloat32)) {
    tol = std::max(tol, kFloat32Tol);
  }
  if (tol == 0) {
    if (!bitwise_equal(a, b)) out << what << ": not bitwise equal";
    return out.str();
  }
  const double err = (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
  const double scale = 1 + b.to(kFloat64).abs().max().item<double>();
  if (!(err <= tol * scale))
    out << what << ": max difference " << err << " (scale " << scale << ")";
  return out.str();
}

}  // namespace strata::fuzz
