// Environment variables set (or unset) for the scope of a test and restored after: what a
// child the test starts (endured, a server) inherits.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace endure::test {

class ScopedEnv {
 public:
  // Each name with its value, or with nullopt to unset it.
  explicit ScopedEnv(std::vector<std::pair<std::string, std::optional<std::string>>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = ::getenv(name.c_str());
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      set(name, value);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) set(name, value);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  static void set(const std::string& name, const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace endure::test
