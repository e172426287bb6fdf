// A tour of forward mode and Jacobians: a directional derivative with jvp, a
// linearization reused for several tangents, the Jacobian of a small network by
// jacrev and by jacfwd against its closed form, Newton's method with hessian, and
// a batch of Hessians with vmap. Every result is checked and the program says OK.
#include <strata/strata.h>

#include <cmath>
#include <iostream>

namespace st = strata;

namespace {

bool report(const char* what, const st::Tensor& actual, const st::Tensor& expected) {
  const double error = (actual - expected).abs().max().item<double>();
  const bool ok = error < 1e-8;
  std::cout << what << ": max error " << error << (ok ? " OK" : " WRONG") << "\n";
  return ok;
}

// A smooth, strictly convex function with its minimum where exp(x) + x = c.
st::Tensor energy(const st::Tensor& x, const st::Tensor& c) {
  return (x.exp() + x * x * 0.5 - x * c).sum();
}

}  // namespace

int main() {
  st::Generator gen(0);
  bool ok = true;

  // d/dt f(x + t v) at t = 0, in one forward pass.
  const st::Tensor x = st::randn({5}, gen, st::kFloat64);
  const st::Tensor v = st::randn({5}, gen, st::kFloat64);
  auto f = [](const st::Tensor& t) { return t.sin() * t * t; };
  auto [y, dy] = st::jvp(f, std::tuple{x}, std::tuple{v});
  ok &= report("jvp of sin(x) x^2", dy, (x.cos() * x * x + x.sin() * x * 2.0) * v);

  // linearize evaluates f once; jvp_fn reuses its linear part for any tangent.
  auto [y0, jvp_fn] = st::linearize(f, x);
  ok &= report("linearize, first tangent", jvp_fn(v), dy);
  ok &= report("linearize, second tangent", jvp_fn(v * 2.0), dy * 2.0);

  // The Jacobian of y = tanh(W2 tanh(W1 x + b1) + b2), both ways.
  const st::Tensor w1 = st::randn({6, 5}, gen, st::kFloat64) * 0.5;
  const st::Tensor b1 = st::randn({6}, gen, st::kFloat64);
  const st::Tensor w2 = st::randn({4, 6}, gen, st::kFloat64) * 0.5;
  const st::Tensor b2 = st::randn({4}, gen, st::kFloat64);
  auto net = [&](const st::Tensor& t) {
    return (w2.matmul((w1.matmul(t) + b1).tanh()) + b2).tanh();
  };
  const st::Tensor h = (w1.matmul(x) + b1).tanh();
  const st::Tensor out = net(x);
  const st::Tensor closed_form =
      ((1.0 - out * out).unsqueeze(1) * w2).matmul((1.0 - h * h).unsqueeze(1) * w1);
  ok &= report("jacrev of the network [4, 5]", st::jacrev(net)(x), closed_form);
  ok &= report("jacfwd of the network [4, 5]", st::jacfwd(net)(x), closed_form);

  // Newton's method: x <- x - H^-1 g. The Hessian of `energy` is diagonal, so the
  // step divides by its diagonal; the gradient norm falls quadratically.
  const st::Tensor c = st::tensor({3.0, -1.0, 0.5, 2.0}, {4});
  st::Tensor z = st::zeros({4}, st::kFloat64);
  for (int step = 0; step < 6; ++step) {
    const st::Tensor g = st::grad(energy)(z, c);
    const st::Tensor hess = st::hessian(energy)(z, c);
    std::cout << "newton step " << step << ": |gradient| = " << g.norm().item<double>() << "\n";
    z = z - g / hess.diagonal(0, 0, 1);
  }
  ok &= report("newton's minimum solves exp(x) + x = c", z.exp() + z, c);

  // A batch of Hessians in one call: vmap over hessian.
  const st::Tensor batch = st::randn({3, 4}, gen, st::kFloat64);
  auto energy_of = [&](const st::Tensor& t) { return energy(t, c); };
  const st::Tensor hessians = st::vmap(st::hessian(energy_of))(batch);
  const st::Tensor diagonals = (batch.exp() + 1.0).unsqueeze(1);  // [3, 1, 4]
  ok &=
      report("vmap(hessian), 3 Hessians [4, 4]", hessians, st::eye(4, 4, st::kFloat64) * diagonals);

  std::cout << (ok ? "jacobians tour: OK" : "jacobians tour: FAILED") << "\n";
  return ok ? 0 : 1;
}
