// libFuzzer target: FunctionSchema text (tests/fuzz/README.md, "libFuzzer targets").
// Any text either parses or throws strata::Error; a parsed schema prints to a
// canonical text that parses back to an equal schema printing the same text.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "dispatcher/function_schema.h"
#include "tensor/error.h"
#include "tests/fuzz/libfuzzer/sanitizer_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)strata::parse_operator_name(text);
  } catch (const strata::Error&) {
  }
  std::optional<strata::FunctionSchema> schema;
  try {
    schema = strata::parse_schema(text);
  } catch (const strata::Error&) {
    return 0;
  }
  const std::string canonical = schema->to_string();
  try {
    const strata::FunctionSchema again = strata::parse_schema(canonical);
    if (!(again == *schema) || again.to_string() != canonical) {
      std::fprintf(stderr, "schema text is not canonical:\n  %s\n  %s\n", canonical.c_str(),
                   again.to_string().c_str());
      std::abort();
    }
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "canonical text does not parse: %s\n%s\n", canonical.c_str(), e.what());
    std::abort();
  }
  return 0;
}
