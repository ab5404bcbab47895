#include "train/data/docstrings.h"

#include <algorithm>
#include <sstream>

namespace endure::data {
namespace {

std::string cleandoc(const std::string& raw) {
  std::vector<std::string> lines;
  std::stringstream in(raw);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.pop_back();
    }
    lines.push_back(line);
  }
  if (lines.empty()) return {};
  lines[0].erase(0, lines[0].find_first_not_of(" \t"));  // npos clears a blank line
  size_t indent = std::string::npos;
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t lead = lines[i].find_first_not_of(' ');
    if (lead != std::string::npos) indent = std::min(indent, lead);
  }
  for (size_t i = 1; i < lines.size() && indent != std::string::npos; ++i) {
    lines[i].erase(0, std::min(indent, lines[i].size()));
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  while (!lines.empty() && lines.front().empty()) lines.erase(lines.begin());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace

std::vector<std::string> extract_docstrings(const std::string& source, size_t min_bytes) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t d = source.find("\"\"\"", pos), s = source.find("'''", pos);
    size_t open = std::min(d, s);
    if (open == std::string::npos) break;
    const char* quote = open == d ? "\"\"\"" : "'''";
    size_t close = source.find(quote, open + 3);
    if (close == std::string::npos) break;
    std::string doc = cleandoc(source.substr(open + 3, close - open - 3));
    if (doc.size() >= min_bytes) out.push_back(std::move(doc));
    pos = close + 3;
  }
  return out;
}

}  // namespace endure::data
