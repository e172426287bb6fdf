#include "tests/fuzz/checks.h"

#include "tests/fuzz/check_support.h"

namespace strata::fuzz {
namespace {

std::string vmap_vs_loop(const Program& p, std::mt19937_64& rng) {
  const Tensor xs = random_tensor(rng, with_batch(p.shape));
  const Tensor y = random_tensor(rng, p.y_shape);
  const bool batch_last = !p.shape.empty() && rng() % 2;
  const int64_t dim = batch_last ? -1 : 0;
  const Tensor x_in = batch_last ? xs.movedim(0, -1) : xs;
  const bool y_batched = rng() % 2;
  const Tensor ys = y_batched ? random_tensor(rng, with_batch(p.y_shape)) : y;
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
  const Tensor ys = random_tensor(rng, with_batch(p.y_shape));
  auto f = [&](const Tensor& a, const Tensor& b) { return run(p, a, b); };
  return agree(
      "vmap(chunk_size 2) vs vmap", [&] { return vmap(f, {.chunk_size = 2})(xs, ys); },
      [&] { return vmap(f)(xs, ys); }, 1e-12);
}

// A floating program in Float64 with random inputs, for the finite-difference
// checks. (Named members, not structured bindings: clang 14 cannot capture those.)
struct Float64Case {
  Program p;
  Tensor x, y;
};
Float64Case float64_case(const Program& program, std::mt19937_64& rng) {
  Program p = in_float64(program);
  Tensor x = random_tensor(rng, p.shape);
  Tensor y = random_tensor(rng, p.y_shape);
  return {std::move(p), std::move(x), std::move(y)};
}

std::string grad_vs_finite_differences(const Program& program, std::mt19937_64& rng) {
  if (!floating(program)) return {};
  const Float64Case c = float64_case(program, rng);
  const Program& p = c.p;
  const Tensor &x = c.x, &y = c.y;
  auto loss = [&](const Tensor& a) { return run(p, a, y).sum(); };
  return agree(
      "grad vs finite differences", [&] { return grad(loss)(x); },
      [&] { return finite_difference_gradient([&](const Tensor& a) { return loss(a).item<double>(); }, x); },
      kFiniteDifferenceTol);
}

// vjp_fn(ct) for both inputs against the float64 finite-difference gradients of
// sum(f(x, y) * ct): the cotangent of a broadcast input is summed over the
// broadcast dims.
std::string vjp_vs_finite_differences(const Program& program, std::mt19937_64& rng) {
  if (!floating(program)) return {};
  const Float64Case c = float64_case(program, rng);
  const Program& p = c.p;
  const Tensor &x = c.x, &y = c.y;
  const Tensor ct = random_tensor(rng, output_shape(p));
  auto dot = [&](const Tensor& a, const Tensor& b) { return (run(p, a, b) * ct).sum().item<double>(); };
  return agree(
      "vjp vs finite differences",
      [&] {
        const auto [gx, gy] = vjp([&](const Tensor& a, const Tensor& b) { return run(p, a, b); }, x, y)
                                  .second(ct);
        return cat({gx.reshape({-1}), gy.reshape({-1})});
      },
      [&] {
        return cat({finite_difference_gradient([&](const Tensor& a) { return dot(a, y); }, x).reshape({-1}),
                    finite_difference_gradient([&](const Tensor& b) { return dot(x, b); }, y).reshape({-1})});
      },
      kFiniteDifferenceTol);
}

// jvp with tangents for both inputs against the central difference of f along them.
std::string jvp_vs_finite_differences(const Program& program, std::mt19937_64& rng) {
  if (!floating(program)) return {};
  const Float64Case c = float64_case(program, rng);
  const Program& p = c.p;
  const Tensor &x = c.x, &y = c.y;
  const Tensor tx = random_tensor(rng, p.shape);
  const Tensor ty = random_tensor(rng, p.y_shape);
  auto f = [&](const Tensor& a, const Tensor& b) { return run(p, a, b); };
  return agree(
      "jvp vs finite differences", [&] { return jvp(f, std::tuple{x, y}, std::tuple{tx, ty}).second; },
      [&] {
        const double eps = kFiniteDifferenceStep;
        return (f(x + tx * eps, y + ty * eps) - f(x - tx * eps, y - ty * eps)) / (2 * eps);
      },
      kFiniteDifferenceTol);
}

std::string jacrev_vs_jacfwd(const Program& p, std::mt19937_64& rng) {
  if (!floating(p)) return {};
  const Tensor x = random_tensor(rng, p.shape);
  const Tensor y = random_tensor(rng, p.y_shape);
  auto f = [&](const Tensor& a) { return run(p, a, y); };
  return agree(
      "jacrev vs jacfwd", [&] { return jacrev(f)(x); }, [&] { return jacfwd(f)(x); }, 1e-10);
}

std::string vmap_grad_vs_loop(const Program& p, std::mt19937_64& rng) {
  if (!floating(p)) return {};
  const Tensor xs = random_tensor(rng, with_batch(p.shape));
  const Tensor y = random_tensor(rng, p.y_shape);
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
  static const std::vector<Check> checks = [] {
    std::vector<Check> all = {
      {"vmap (random in_dims, chunk_size 0/1/2) vs loop", &vmap_vs_loop},
      {"vmap chunk_size 2 vs none", &chunked_vs_whole},
      {"grad vs float64 finite differences", &grad_vs_finite_differences},
      {"vjp (both inputs, broadcast) vs float64 finite differences", &vjp_vs_finite_differences},
      {"jvp (both inputs) vs float64 finite differences", &jvp_vs_finite_differences},
      {"jacrev vs jacfwd", &jacrev_vs_jacfwd},
      {"vmap(grad) vs loop of grad", &vmap_grad_vs_loop},
    };
    all.insert(all.end(), stack_checks().begin(), stack_checks().end());
    all.insert(all.end(), nested_checks().begin(), nested_checks().end());
    all.insert(all.end(), error_checks().begin(), error_checks().end());
    return all;
  }();
  return checks;
}

const Check& find_check(const std::string& name) {
  for (const Check& check : all_checks()) {
    if (name == check.name) return check;
  }
  STRATA_FAIL("fuzz::find_check", "no check called '", name, "'");
}

}  // namespace strata::fuzz
