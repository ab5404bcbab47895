// CI's rule for a missing prerequisite: on a person's machine a test that cannot run skips,
// saying why; under CI (the variable CI set, as CI systems set it: CI=true) the
// prerequisites are what scripts/setup.sh installs, so a missing one fails the test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

namespace endure::test {

// True when the variable CI is set to anything but "", "0" or "false".
inline bool in_ci() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  const std::string_view v(ci);
  return !v.empty() && v != "0" && v != "false";
}

}  // namespace endure::test

// In a test body or SetUp(), for a prerequisite that is missing: skips naming `why`, or
// under CI fails naming it. Returns from the function either way.
#define SKIP_UNLESS_CI(why)                                                                        \
  do {                                                                                             \
    if (::endure::test::in_ci()) {                                                                 \
      FAIL() << (why) << " (CI is set: the prerequisites scripts/setup.sh installs must be here)"; \
    }                                                                                              \
    GTEST_SKIP() << (why);                                                                         \
  } while (0)
