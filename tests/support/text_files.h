// Reading what a program under test wrote: a whole file, or its JSON lines.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/json.h"

namespace endure::test {

// The file's text; empty when it cannot be read.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
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
