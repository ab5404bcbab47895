#include "agent/health/slurmd.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/log.h"

namespace endure::agent::health {

namespace {

Finding gone(std::string detail) { return {FaultKind::kSlurmdGone, "slurmd", std::move(detail)}; }

bool read_small_file(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

}  // namespace

std::vector<Finding> SlurmdCheck::run() {
  auto findings = look();
  if (findings.empty()) return findings;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return look();
}

std::vector<Finding> SlurmdCheck::look() const {
  std::vector<Finding> findings;
  try {
    std::string text;
    if (!read_small_file(pid_file_, text)) {
      findings.push_back(gone(pid_file_ + ": cannot be read (slurmd not running?)"));
      return findings;
    }
    std::size_t first = text.find_first_not_of(" \t\r\n");
    long pid = 0;
    const char* begin =
        first == std::string::npos ? text.data() + text.size() : text.data() + first;
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), pid);
    if (ec != std::errc() || end == begin || pid <= 0) {
      findings.push_back(gone(pid_file_ + ": no pid in it"));
      return findings;
    }

    // /proc/<pid>/stat is "pid (comm) state ...": comm may hold spaces and parentheses, so
    // it ends at the last ')'.
    std::string stat;
    std::string stat_path = fmt::format("/proc/{}/stat", pid);
    if (!read_small_file(stat_path, stat) || stat.empty()) {
      findings.push_back(
          gone(fmt::format("slurmd pid {} (from {}) is not running", pid, pid_file_)));
      return findings;
    }
    std::size_t open = stat.find('(');
    std::size_t close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open ||
        close + 2 >= stat.size()) {
      findings.push_back(gone(fmt::format("{}: unexpected format", stat_path)));
      return findings;
    }
    std::string comm = stat.substr(open + 1, close - open - 1);
    char state = stat[close + 2];
    if (comm != "slurmd") {
      findings.push_back(
          gone(fmt::format("pid {} (from {}) is \"{}\", not slurmd", pid, pid_file_, comm)));
    } else if (state == 'Z' || state == 'X') {
      findings.push_back(gone(fmt::format("slurmd pid {} is a zombie", pid)));
    }
  } catch (const std::exception& e) {
    log::warn("slurmd check: {}", e.what());
  }
  return findings;
}

}  // namespace endure::agent::health
