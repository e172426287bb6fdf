// Must not compile, once per CASE (see tests/CMakeLists.txt): each misuse stops at
// the library's static_assert.
#include <strata/strata.h>

namespace st = strata;

struct Pair {
  st::Tensor a, b;
};
template <>
struct strata::TreeFields<Pair> {
  template <class Self>
  static auto fields(Self& p) {
    return std::tie(p.a, p.b);
  }
};

int main() {
  const st::Tensor x = st::ones({2});
  auto f = [](const st::Tensor& t) { return t.sin(); };
#if CASE == 1
  st::jacrev<1>(f)(x);  // an argnum out of range
#elif CASE == 2
  st::jacfwd<0, 1>(f)(x);
#elif CASE == 3
  st::jacrev([](const st::Tensor& t) { return Pair{t, t}; })(x);  // a struct as the output tree
#elif CASE == 4
  st::grad<0, 0>([](const st::Tensor& t) { return t.sum(); })(x);  // a repeated argnum
#elif CASE == 5
  st::jacrev<0, 0>(f)(x);
#else
  st::jacfwd<0, 0>(f)(x);
#endif
}
