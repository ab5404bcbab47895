#include "cli/home.h"

#include <unistd.h>

#include <cstdlib>

#include "common/system_paths.h"

namespace endure::cli {

std::filesystem::path find_endure_home(const std::string& env_home,
                                       const std::filesystem::path& user_home,
                                       const std::filesystem::path& system_home) {
  if (!env_home.empty()) return env_home;
  std::error_code ec;
  if (std::filesystem::exists(user_home / "endpoint", ec)) return user_home;
  if (::access((system_home / "token").c_str(), R_OK) == 0) return system_home;
  return user_home;
}

std::filesystem::path endure_home() {
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  std::string home = env("HOME");
  return find_endure_home(env("ENDURE_HOME"),
                          std::filesystem::path(home.empty() ? "/root" : home) / ".endure",
                          kSystemHome);
}

}  // namespace endure::cli
