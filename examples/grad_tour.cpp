// A tour of the reverse-mode transforms: the gradient of an MLP's loss w.r.t. a
// std::map of its parameters, grad_and_value, a third derivative by nesting, a
// vector-Jacobian product, and gradcheck on a user function.
#include <strata/strata.h>

#include <cmath>
#include <iostream>
#include <map>
#include <string>

namespace st = strata;
using Params = std::map<std::string, st::Tensor>;

st::Tensor loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  st::Tensor h = st::nn::linear(x, p.at("w1"), p.at("b1")).relu();
  return st::nn::cross_entropy(st::nn::linear(h, p.at("w2"), p.at("b2")), y);
}

int main() {
  st::Generator gen(0);
  Params params{{"w1", st::randn({16, 8}, gen) * 0.3},
                {"b1", st::zeros({16})},
                {"w2", st::randn({4, 16}, gen) * 0.3},
                {"b2", st::zeros({4})}};
  st::Tensor x = st::randn({32, 8}, gen);
  st::Tensor y = st::randint(0, 4, {32}, gen);

  // One line: the gradient has the parameters' tree shape.
  auto [grads, value] = st::grad_and_value(loss)(params, x, y);
  std::cout << "loss " << value.item<double>() << "\n";
  for (const auto& [name, g] : grads) {
    std::cout << "  d loss / d " << name << ": shape " << st::shape_string(g.sizes()) << ", norm "
              << g.norm().item<double>() << "\n";
  }

  // A few steps of gradient descent.
  for (int step = 0; step < 20; ++step) {
    Params g = st::grad(loss)(params, x, y);
    for (auto& [name, p] : params) p = p - g.at(name) * 0.5;
  }
  std::cout << "loss after 20 steps " << loss(params, x, y).item<double>() << "\n";

  // Nesting: d^3/dx^3 of sin(x) x^2, against the closed form.
  auto f = [](const st::Tensor& t) { return t.sin() * t * t; };
  const double at = 0.7;
  double third = st::grad(st::grad(st::grad(f)))(st::tensor({at}, {})).item<double>();
  double expected = 6 * std::cos(at) - 6 * at * std::sin(at) - at * at * std::cos(at);
  std::cout << "third derivative " << third << " (closed form " << expected << ")\n";

  // vjp: J^T u for a vector-valued function, reusable for several u.
  auto [out, vjp_fn] = st::vjp([](const st::Tensor& t) { return t.exp() * 2.0; }, x.select(0, 0));
  auto [cotangent_grad] = vjp_fn(st::ones_like(out));
  std::cout << "vjp of 2 exp(x) with u = 1 differs from 2 exp(x) by "
            << (cotangent_grad - out).abs().amax().item<double>() << "\n";

  // gradcheck: analytic against finite differences, for any function of tensors.
  auto result = st::testing::gradcheck(
      [](const std::vector<st::Tensor>& in) { return std::vector{(in[0] * in[1]).tanh().sum()}; },
      {st::randn({3, 3}, gen, st::kFloat64), st::randn({3}, gen, st::kFloat64)});
  std::cout << "gradcheck: " << (result ? "ok" : result.message) << "\n";
  return result && std::abs(third - expected) < 1e-4 ? 0 : 1;
}
