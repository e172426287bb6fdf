// Built against an installed Strata by .ci/run: checks that the exported package
// gives a working library and headers.
#include <cstdio>

#include <strata/strata.h>

int main() {
  namespace st = strata;
  st::Tensor x = st::tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  st::Tensor y = x * x + x;
  std::vector<double> got = y.to_vector<double>();
  const double expected[] = {2, 6, 12, 20};
  for (int i = 0; i < 4; ++i) {
    if (got[i] != expected[i]) {
      std::printf("consumer: wrong value %g at %d\n", got[i], i);
      return 1;
    }
  }
  std::printf("consumer: Strata::strata works (x * x + x = [2, 6, 12, 20])\n");
  return 0;
}
