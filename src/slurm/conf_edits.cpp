#include "slurm/conf_edits.h"

#include <strings.h>

#include <algorithm>
#include <sstream>
#include <string_view>

#include "slurm/slurm_conf.h"

namespace endure::slurm {
namespace {

constexpr const char* kSealPrefix = "# endured's seal (an edit by hand is found by it): ";

// The file without its seal line (wherever an edit left it), or the whole file when it has
// none.
std::string unsealed(const std::string& text) {
  size_t at = text.rfind(kSealPrefix);
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n')) return text;
  size_t end = text.find('\n', at);
  return text.substr(0, at) + (end == std::string::npos ? "" : text.substr(end + 1));
}

// "PartitionName=NAME ..." (slurm.conf's keys are case-insensitive): NAME, or "".
std::string partition_of_line(const std::string& raw) {
  constexpr std::string_view kKey = "PartitionName=";
  const size_t start = std::min(raw.find_first_not_of(" \t"), raw.size());
  if (::strncasecmp(raw.c_str() + start, kKey.data(), kKey.size()) != 0) return "";
  const std::string rest = raw.substr(start + kKey.size());
  return rest.substr(0, rest.find_first_of(" \t"));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

std::string seal(const std::string& body) { return body + kSealPrefix + content_hash(body) + "\n"; }

bool seal_intact(const std::string& text) {
  std::string body = unsealed(text);
  return body.size() != text.size() && text == seal(body);
}

std::vector<std::string> partition_names(const std::string& conf) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(conf)) {
    if (auto name = partition_of_line(line); !name.empty()) out.push_back(name);
  }
  return out;
}

std::vector<std::string> added_partition_lines(const std::string& ours, const std::string& edited) {
  const auto own = partition_names(ours);
  std::vector<std::string> out;
  for (const auto& line : lines_of(unsealed(edited))) {
    std::string name = partition_of_line(line);
    if (name.empty() || ::strcasecmp(name.c_str(), "DEFAULT") == 0) continue;
    if (std::find(own.begin(), own.end(), name) == own.end()) out.push_back(line);
  }
  return out;
}

std::string with_lines(const std::string& ours, const std::vector<std::string>& extra) {
  if (extra.empty()) return ours;
  std::string body = unsealed(ours);
  body += "# Kept from the file as edited on the controller (SlurmConfigStrategy Merge):\n";
  for (const auto& line : extra) body += line + "\n";
  return seal(body);
}

}  // namespace endure::slurm
