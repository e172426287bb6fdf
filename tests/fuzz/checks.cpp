#include "tests/fuzz/checks.h"

#include <cmath>
#include <optional>
#include <sstream>

namespace strata::fuzz {
namespace {

constexpr int64_t kBatch = 3;

Tensor random_tensor(std::mt19937_64& rng, const std::vector<int64_t>& shape) {
  std::normal_distribution<double> normal;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) v = normal(rng);
  return tensor(values, shape).to(kFloat64);
}

std::vector<int64_t> with_batch(const std::vector<int64_t>& shape) {
  std::vector<int64_t> out{kBatch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// Empty when a and b have one shape and agree to within tol (relative to their size).
std::string compare(const char* what, const Tensor& a, const Tensor& b, double tol) {
  std::ostringstream out;
  if (a.sizes() != b.sizes()) {
    out << what << ": shapes " << shape_string(a.sizes()) << " vs " << shape_string(b.sizes());
    return out.str();
  }
  if (a.numel() == 0) return {};
  const double err = (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
  const double scale = 1 + b.to(kFloat64).abs().max().item<double>();
  if (!(err <= tol * scale))
    out << what << ": max difference " << err << " (scale " << scale << ")";
  return out.str();
}

// Runs f; an error (strata::Error) is returned as nullopt with its message.
template <class F>
std::optional<Tensor> attempt(F&& f, std::string& error) {
  try {
    return f();
  } catch (const Error& e) {
    error = e.what();
    return std::nullopt;
  }
}

// Both ran, or both raised a strata::Error.
template <class F, class G>
std::string agree(const char* what, F&& transformed, G&& reference, double tol) {
  std::string e1, e2;
  const std::optional<Tensor> a = attempt(transformed, e1);
  const std::optional<Tensor> b = attempt(reference, e2);
  if (!a && !b) return {};
  // A transform may raise a clear error for what it does not support (writing a
  // batched value into an unbatched tensor, an in-place op on a view under grad):
  // counted and listed by the driver, not a failure.
  if (!a) return std::string(kUnsupported) + std::string(what) + ": " + e1;
  if (!b) return std::string(what) + ": the reference raised but the transform ran: " + e2;
  return compare(what, *a, *b, tol);
}

std::string vmap_vs_loop(const Program& p, std::mt19937_64& rng) {
  const Tensor xs = random_tensor(rng, with_batch(p.shape));
  const Tensor y = random_tensor(rng, p.shape);
  const bool batch_last = !p.shape.empty() && rng() % 2;
  const int64_t dim = batch_last ? -1 : 0;
  const Tensor x_in = batch_last ? xs.movedim(0, -1) : xs;
  const bool y_batched = rng() % 2;
  const Tensor ys = y_batched ? random_tensor(rng, with_batch(p.shape)) : y;
  const int64_t chunk = static_cast<int64_t>(rng() % 3);
  auto f = [&](const Tensor& a, const Tensor& b) { return run(p, a, b); };
  VmapOptions options{.in_dims = {dim, y_batched ? std::optional<int64_t>(0) : none},
                      .chunk_size = chunk};
  return agree(
      "vmap vs loop", [&] { return vmap(f, options)(x_in, ys); },
      [&] {
        std::vector<Tensor> rows;
        for (int64_t i = 0; i < kBatch; ++i) {
          rows.push_back(run(p, xs.select(0, i), y_batched ? ys.select(0, i) : ys));
        }
        return stack(rows);
      },
      1e-12);
}

std::string chunked_vs_whole(const Program& p, std::mt19937_64& rng) {
  const Tensor xs = random_tensor(rng, with_batch(p.shape));
  const Tensor ys = random_tensor(rng, with_batch(p.shape));
  auto f = [&](const Tensor& a, const Tensor& b) { return run(p, a, b); };
  return agree(
      "vmap(chunk_size 2) vs vmap", [&] { return vmap(f, {.chunk_size = 2})(xs, ys); },
      [&] { return vmap(f)(xs, ys); }, 1e-12);
}

std::string grad_vs_finite_differences(const Program& p, std::mt19937_64& rng) {
  const Tensor x = random_tensor(rng, p.shape);
  const Tensor y = random_tensor(rng, p.shape);
  auto loss = [&](const Tensor& a) { return run(p, a, y).sum(); };
  return agree(
      "grad vs finite differences", [&] { return grad(loss)(x); },
      [&] {
        const double eps = 1e-6;
        Tensor flat = x.clone().reshape({-1});
        std::vector<double> g;
        for (int64_t i = 0; i < flat.numel(); ++i) {
          Tensor plus = flat.clone(), minus = flat.clone();
          plus.select(0, i).add_(tensor({eps}).to(kFloat64).reshape({}));
          minus.select(0, i).sub_(tensor({eps}).to(kFloat64).reshape({}));
          const double up = loss(plus.reshape(p.shape)).item<double>();
          const double down = loss(minus.reshape(p.shape)).item<double>();
          g.push_back((up - down) / (2 * eps));
        }
        return tensor(g, p.shape).to(kFloat64);
      },
      1e-5);
}

std::string jacrev_vs_jacfwd(const Program& p, std::mt19937_64& rng) {
  const Tensor x = random_tensor(rng, p.shape);
  const Tensor y = random_tensor(rng, p.shape);
  auto f = [&](const Tensor& a) { return run(p, a, y); };
  return agree(
      "jacrev vs jacfwd", [&] { return jacrev(f)(x); }, [&] { return jacfwd(f)(x); }, 1e-10);
}

std::string vmap_grad_vs_loop(const Program& p, std::mt19937_64& rng) {
  const Tensor xs = random_tensor(rng, with_batch(p.shape));
  const Tensor y = random_tensor(rng, p.shape);
  auto loss = [&](const Tensor& a) { return run(p, a, y).sum(); };
  return agree(
      "vmap(grad) vs loop of grad", [&] { return vmap(grad(loss))(xs); },
      [&] {
        std::vector<Tensor> rows;
        for (int64_t i = 0; i < kBatch; ++i) rows.push_back(grad(loss)(xs.select(0, i)));
        return stack(rows);
      },
      1e-12);
}

}  // namespace

const std::vector<Check>& all_checks() {
  static const std::vector<Check> checks = {
      {"vmap (random in_dims, chunk_size 0/1/2) vs loop", &vmap_vs_loop},
      {"vmap chunk_size 2 vs none", &chunked_vs_whole},
      {"grad vs float64 finite differences", &grad_vs_finite_differences},
      {"jacrev vs jacfwd", &jacrev_vs_jacfwd},
      {"vmap(grad) vs loop of grad", &vmap_grad_vs_loop},
  };
  return checks;
}

}  // namespace strata::fuzz
