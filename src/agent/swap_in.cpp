#include "agent/swap_in.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "api/node_contract.h"
#include "api/node_files.h"
#include "common/fs.h"
#include "common/process.h"

namespace endure::agent {
namespace {

using namespace std::chrono_literals;

Error swap_error(const std::string& what) { return make_error("SwapInFailed", what); }

int slurmd_pid() {
  auto text = fs::read_file(node::kSlurmdPidFile);
  if (!text) return 0;
  try {
    return std::stoi(*text);
  } catch (const std::exception&) {
    return 0;
  }
}

// The command line of a running process, argument by argument.
std::vector<std::string> command_line(int pid) {
  std::vector<std::string> argv;
  auto text = fs::read_file("/proc/" + std::to_string(pid) + "/cmdline");
  if (!text) return argv;
  size_t start = 0;
  for (size_t i = 0; i < text->size(); ++i) {
    if ((*text)[i] != '\0') continue;
    argv.push_back(text->substr(start, i - start));
    start = i + 1;
  }
  return argv;
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

}  // namespace

std::vector<std::string> with_node_name(std::vector<std::string> argv,
                                        const std::string& node_name) {
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "-N" && i + 1 < argv.size()) {
      argv[i + 1] = node_name;
      return argv;
    }
    if (argv[i].rfind("-N", 0) == 0 && argv[i].size() > 2) {
      argv[i] = "-N" + node_name;
      return argv;
    }
  }
  argv.insert(argv.begin() + 1, {"-N", node_name});
  return argv;
}

Status swap_in(const std::string& config_path, const std::string& node_name,
               const std::string& partition) {
  auto text = fs::read_file(config_path);
  if (!text) return text.error();
  auto config = api::AgentConfig::from_json(json::parse(*text, nullptr, false));
  if (!config) return config.error();
  if (config->role != "worker") return swap_error("only a worker node can be swapped in");
  config->node_name = node_name;
  config->partition = partition;
  if (auto s = fs::atomic_write_file(config_path, config->to_json().dump(2), 0600); !s) return s;

  int old_pid = slurmd_pid();
  if (old_pid <= 0 || !process::alive(old_pid)) {
    return swap_error(std::string("no slurmd runs here (") + node::kSlurmdPidFile + ")");
  }
  auto argv = command_line(old_pid);
  if (argv.empty()) return swap_error("cannot read slurmd's command line");
  bool same_name = with_node_name(argv, node_name) == argv;
  if (same_name) return {};  // swapped in already (endured asked again after a crash)
  ::kill(old_pid, SIGTERM);
  if (!wait_until([&] { return !process::alive(old_pid); }, 5s)) {
    ::kill(old_pid, SIGKILL);
    wait_until([&] { return !process::alive(old_pid); }, 2s);
  }
  // slurmd puts itself in the background: the foreground process ends once it has.
  process::Options options;
  options.timeout = 10s;
  auto started = process::run(with_node_name(argv, node_name), options);
  if (started.exit_code != 0) {
    return swap_error("slurmd -N " + node_name + " did not start: " + started.err);
  }
  if (!wait_until(
          [&] {
            int pid = slurmd_pid();
            return pid > 0 && pid != old_pid && process::alive(pid);
          },
          5s)) {
    return swap_error("slurmd -N " + node_name + " wrote no live pid to " + node::kSlurmdPidFile);
  }
  return {};
}

}  // namespace endure::agent
