// A folder of /tmp for a fuzz target's files: made on first use and removed when the fuzzer
// exits, since one process runs the target millions of times.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace endure::fuzz {

// "/tmp/endure-fuzz-<name>-XXXXXX"; the first call's name holds for the process.
inline const std::filesystem::path& scratch_folder(const std::string& name) {
  static std::filesystem::path root;
  static const bool made = [&] {
    std::string templ = "/tmp/endure-fuzz-" + name + "-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    root = templ;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(root, ec);
    });
    return true;
  }();
  (void)made;
  return root;
}

}  // namespace endure::fuzz
