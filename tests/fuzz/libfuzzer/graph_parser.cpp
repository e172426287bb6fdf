// libFuzzer target: Graph text (Note [Trace graph text]; tests/fuzz/README.md).
// Any text either parses or throws strata::Error. A parsed graph prints a text
// that parses to a graph printing the same text, and replaying it on inputs of
// its declared types gives outputs or a strata::Error.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/strata.h>

#include "func/trace/graph.h"
#include "tests/fuzz/libfuzzer/sanitizer_options.h"

namespace {

// Inputs larger than this are not replayed: the text may declare any shape.
constexpr int64_t kMaxReplayElements = 1 << 12;

std::optional<std::vector<strata::Tensor>> replay_inputs(const strata::Graph& g) {
  std::vector<strata::Tensor> inputs;
  int64_t total = 0;
  for (const int64_t id : g.inputs()) {
    const strata::ValueType& type = g.values()[static_cast<size_t>(id)].type;
    if (!type.device.is_cpu()) return std::nullopt;
    int64_t numel = 1;
    for (const int64_t s : type.sizes) {
      if (s < 0 || (s > 0 && numel > kMaxReplayElements / s)) return std::nullopt;
      numel *= s;
    }
    total += numel;
    if (total > kMaxReplayElements) return std::nullopt;
    const strata::IntArrayRef sizes(type.sizes.data(), type.sizes.size());
    inputs.push_back((strata::arange(numel, strata::kFloat64) / 7.0).sin().reshape(sizes).to(type.dtype));
  }
  return inputs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<strata::Graph> graph;
  try {
    graph = strata::Graph::parse(text);
  } catch (const strata::Error&) {
    return 0;
  }
  const std::string printed = graph->to_string();
  try {
    const std::string again = strata::Graph::parse(printed).to_string();
    if (again != printed) {
      std::fprintf(stderr, "graph text does not round-trip:\n%s\n---\n%s\n", printed.c_str(),
                   again.c_str());
      std::abort();
    }
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "printed graph does not parse:\n%s\n%s\n", printed.c_str(), e.what());
    std::abort();
  }
  if (const auto inputs = replay_inputs(*graph)) {
    try {
      (void)graph->run(*inputs);
    } catch (const strata::Error&) {
    }
  }
  return 0;
}
