#include "provider/local/namespace_processes.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace endure::provider {

std::vector<int> processes_in_namespace_of(int pid) {
  std::vector<int> out;
  std::error_code ec;
  auto ns = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec);
  if (ec) return out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::error_code e2;
    if (std::filesystem::read_symlink(entry.path() / "ns/pid", e2) == ns && !e2) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

char process_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return 0;
  // "pid (comm) state ...": comm may hold spaces and parentheses, so it ends at the last ')'.
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return 0;
  return stat[close + 2];
}

int pid_in_own_namespace(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    int last = 0;
    for (int p; fields >> p;) last = p;
    return last;
  }
  return 0;
}

}  // namespace endure::provider
