// The example of README.md, built by CI so the README never lies.
#include <iostream>
#include <strata/strata.h>
namespace st = strata;

int main() {
  st::Tensor x = st::tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});   // Float64, shape [2, 2]
  st::Tensor row = st::tensor({10.0, 20.0}, {2});
  std::cout << x * x + row << "\n";                           // broadcasting
  auto add = st::Dispatcher::singleton().findSchemaOrThrow("strata::add", "Tensor")
                 .typed<st::Tensor(const st::Tensor&, const st::Tensor&, const st::Scalar&)>();
  std::cout << add.call(x, x, 2) << "\n";                     // x + 2 * x, through a typed handle
}
