// Built against an installed Strata by .ci/run: checks that the exported package
// gives a working library and headers, and that DESIGN.md's API is reached
// through <strata/strata.h> alone (transforms, safetensors, st::dist).
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include <strata/strata.h>

namespace st = strata;

namespace {

bool check(bool ok, const char* what) {
  if (!ok) std::printf("consumer: %s\n", what);
  return ok;
}

}  // namespace

int main() {
  const st::Tensor x = st::tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  const std::vector<double> got = (x * x + x).to_vector<double>();
  const double expected[] = {2, 6, 12, 20};
  for (int i = 0; i < 4; ++i) {
    if (!check(got[i] == expected[i], "wrong value of x * x + x")) return 1;
  }
  const auto cube_sum = [](const st::Tensor& t) { return (t * t * t).sum(); };
  const std::vector<double> g = st::grad(cube_sum)(x).to_vector<double>();
  const double three_x_squared[] = {3, 12, 27, 48};
  for (int i = 0; i < 4; ++i) {
    if (!check(g[i] == three_x_squared[i], "wrong gradient of sum(x^3)")) return 1;
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / "strata_consumer.safetensors").string();
  st::save_safetensors(path, {{"x", x}});
  const std::map<std::string, st::Tensor> back = st::load_safetensors(path);
  std::filesystem::remove(path);
  if (!check(back.size() == 1 && back.at("x").to_vector<double>() == x.to_vector<double>(),
             "safetensors round trip differs")) {
    return 1;
  }
#ifdef STRATA_HAVE_MPI
  st::dist::Group (*const init)(int&, char**&) = &st::dist::init;  // links against libstrata
  std::printf("consumer: st::dist::init is at %p (built with MPI)\n", reinterpret_cast<void*>(init));
#endif
  std::printf("consumer: Strata::strata works (values, grad, safetensors)\n");
  return 0;
}
