#include "tensor/generator.h"

#include <mutex>

namespace strata {
namespace {
std::mutex g_default_mutex;
Generator& default_generator_slot() {
  static Generator* generator = new Generator(0);
  return *generator;
}
}  // namespace

Generator default_generator() {
  std::lock_guard<std::mutex> lock(g_default_mutex);
  return default_generator_slot();
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_default_mutex);
  default_generator_slot() = Generator(seed);
}

}  // namespace strata
