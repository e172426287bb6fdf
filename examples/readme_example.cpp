// The example of README.md, built by CI so the README never lies.
#include <iostream>
#include <strata/strata.h>
namespace st = strata;

int main() {
  auto f = [](const st::Tensor& x) { return (x.sin() * x * x).sum(); };
  st::Tensor x = st::tensor({0.5, 1.0, 2.0}, {3});            // Float64, shape [3]
  std::cout << st::grad(f)(x) << "\n";                        // cos(x) x^2 + 2 x sin(x)
  auto df = [&](const st::Tensor& t) { return st::grad(f)(t).sum(); };
  std::cout << st::grad(df)(x) << "\n";                       // the diagonal of the Hessian
  auto [y, vjp_fn] = st::vjp([](const st::Tensor& t) { return t.exp(); }, x);
  std::cout << std::get<0>(vjp_fn(st::ones_like(y))) << "\n"; // exp(x)
}
