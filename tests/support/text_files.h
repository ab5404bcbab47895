// Reading what a program under test wrote: a whole file, or its JSON lines.
#pragma once

#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/json.h"

namespace endure::test {

// The file's text; empty when it cannot be read. A read can fail midway (a /proc file of a
// process that just exited: ESRCH), which libstdc++'s stream buffer throws.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  try {
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  } catch (const std::exception&) {
    return "";
  }
}

// Whether `part` occurs in `text`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every line of the file that is a JSON object, in order (other lines are passed over).
inline std::vector<json> json_lines(const std::filesystem::path& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(j);
  }
  return out;
}

}  // namespace endure::test
