// Must not compile: grad<1> of a one-argument function (see tests/CMakeLists.txt).
#include <strata/strata.h>

int main() {
  strata::Tensor x = strata::ones({2});
  return static_cast<int>(
      strata::grad<1>([](const strata::Tensor& t) { return t.sum(); })(x).numel());
}
