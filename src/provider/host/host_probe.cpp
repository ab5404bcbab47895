#include "provider/host/host_probe.h"

#include <fmt/format.h>

#include <sstream>

#include "api/node_contract.h"
#include "provider/host/host_bootstrap.h"

namespace endure::provider {

namespace {

// The agent's state letter from /proc, "-" when it has no live process.
std::string agent_state_script() {
  return fmt::format(
      "p=$(cat {0} 2>/dev/null); s=-\n"
      "[ -n \"$p\" ] && [ -r /proc/$p/stat ] && s=$(sed 's/.*) //' /proc/$p/stat | cut -c1)\n"
      "echo \"$s\"\n",
      node::kAgentPidFile);
}

}  // namespace

NodeProbe probe_host(SshClient& ssh, std::chrono::milliseconds timeout) {
  NodeProbe out;
  auto seen = ssh.run(agent_state_script(), timeout);
  if (seen.exit_code != 0) {
    out.detail = seen.timed_out ? fmt::format("no answer over SSH within {} ms", timeout.count())
                                : "no answer over SSH: " + seen.err;
    while (!out.detail.empty() && out.detail.back() == '\n') out.detail.pop_back();
    return out;  // unknown, unknown
  }
  out.machine = MachineState::kAlive;
  char state = seen.out.empty() ? '-' : seen.out[0];
  if (state == '-' || state == 'Z' || state == 'X') {
    out.agent = AgentState::kGone;
  } else if (state == 'T' || state == 't') {
    out.agent = AgentState::kStopped;
  } else if (state == 'R') {
    out.agent = AgentState::kRunnable;
  } else {
    out.agent = AgentState::kSleeping;
  }
  out.detail = fmt::format("answers over SSH; agent {}", to_string(out.agent));
  return out;
}

Result<bool> host_service_running(SshClient& ssh, std::chrono::milliseconds timeout) {
  auto out = ssh.run(fmt::format("for f in {} {}; do\n"
                                 "  p=$(cat $f 2>/dev/null) && [ -n \"$p\" ] && kill -0 $p 2>/dev/null"
                                 " && {{ echo yes; exit 0; }}\n"
                                 "done\n"
                                 "echo no\n",
                                 kHostServicePidFile, node::kAgentPidFile),
                     timeout);
  if (out.exit_code != 0) return ssh.failure("look at the agent's service", out);
  return out.out.rfind("yes", 0) == 0;
}

Status check_host_basics(SshClient& ssh, std::chrono::milliseconds timeout) {
  if (auto s = ssh.connect(timeout); !s) return s;
  auto out = ssh.run("echo \"$(uname -s) $(id -u) $(df -Pk / | awk 'NR==2 {print $4}')\"", timeout);
  if (out.exit_code != 0) return ssh.failure("run the basic checks", out);
  std::string kernel, uid;
  long long free_kib = -1;
  std::istringstream words(out.out);
  words >> kernel >> uid >> free_kib;
  const std::string& host = ssh.target().name;
  if (kernel != "Linux") {
    return make_error("HostCheckFailed", "host " + host + " runs " + kernel + ", not Linux");
  }
  if (uid != "0") {
    return make_error("HostCheckFailed", "host " + host + ": user " + ssh.target().user +
                                             " is not root (uid " + uid + ")");
  }
  if (free_kib < 64 * 1024) {
    return make_error("HostCheckFailed",
                      fmt::format("host {}: {} KiB free on /, endure needs 65536", host, free_kib));
  }
  return {};
}

Status restart_host_agent(SshClient& ssh, std::chrono::milliseconds timeout) {
  // SIGCONT first: a stopped agent must be able to take the SIGTERM and end.
  auto out = ssh.run(
      fmt::format("p=$(cat {0}) && kill -CONT $p && kill -TERM $p", node::kAgentPidFile), timeout);
  if (out.exit_code != 0) return ssh.failure("restart the agent", out);
  return {};
}

}  // namespace endure::provider
