#pragma once

// Helpers shared by every test binary.

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "tensor/error.h"

namespace strata::testing {

// Runs f, which must throw strata::Error (any other exception, or none, fails the
// test), and returns the message.
template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected strata::Error, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected strata::Error, nothing was thrown";
  return "";
}

inline void expect_contains(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    EXPECT_NE(message.find(part), std::string::npos)
        << "message \"" << message << "\" should contain \"" << part << "\"";
  }
}

}  // namespace strata::testing
