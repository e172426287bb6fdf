#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace strata {

// Every user-facing failure is a strata::Error. Messages start with a "[tag]"
// naming the operator or component, then say what was wrong and what was given.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

[[noreturn]] void throw_error(const char* tag, const std::string& message);

}  // namespace detail
}  // namespace strata

// STRATA_CHECK(cond, "tag", parts...) throws strata::Error("[tag] parts...")
// when cond is false. The message parts are only formatted on failure, in a
// cold out-of-line lambda: the checks sit on every op's hot path, and an inline
// formatting block would cost the checking function its registers and frame.
#define STRATA_CHECK(cond, tag, ...)                                                 \
  do {                                                                               \
    if (__builtin_expect(!(cond), 0)) {                                              \
      [&]() __attribute__((noinline, cold)) {                                        \
        ::strata::detail::throw_error(tag, ::strata::detail::concat(__VA_ARGS__));   \
      }();                                                                           \
      __builtin_unreachable();                                                       \
    }                                                                                \
  } while (0)

#define STRATA_FAIL(tag, ...) \
  ::strata::detail::throw_error(tag, ::strata::detail::concat(__VA_ARGS__))
