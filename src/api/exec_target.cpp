#include "api/exec_target.h"

#include <cstdlib>

namespace endure::api {

std::vector<std::string> node_exec_argv(int pid, const std::string& node_name,
                                        const std::vector<std::string>& command) {
  // nsenter forks after joining the pid namespace, so the command runs inside it.
  std::vector<std::string> argv = {"nsenter",
                                   "--target",
                                   std::to_string(pid),
                                   "--mount",
                                   "--uts",
                                   "--pid",
                                   "--wd=/",
                                   "--",
                                   "env",
                                   "-i",
                                   std::string("PATH=") + kNodePath,
                                   "HOME=/root",
                                   "LANG=C.UTF-8"};
  if (!node_name.empty()) argv.push_back("HOSTNAME=" + node_name);
  if (const char* term = std::getenv("TERM")) argv.push_back(std::string("TERM=") + term);
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace endure::api
