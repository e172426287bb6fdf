#include "tensor/error.h"

namespace strata::detail {

void throw_error(const char* tag, const std::string& message) {
  std::string full;
  full.reserve(message.size() + 16);
  full += '[';
  full += tag;
  full += "] ";
  full += message;
  throw Error(full);
}

}  // namespace strata::detail
