#include "agent/node_init.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "api/node_contract.h"
#include "common/fs.h"
#include "common/log.h"

namespace endure::agent {

namespace {

using Clock = std::chrono::steady_clock;

// An agent that keeps dying at once is started at most this often, so a broken agent does
// not spin the node's CPU.
constexpr auto kMinRestartGap = std::chrono::seconds(1);

pid_t start_agent(const std::function<int(bool)>& agent, bool restarted, const sigset_t& old) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::_exit(agent(restarted));
  }
  if (pid < 0) {
    log::error("init: fork of the agent failed");
    return 0;
  }
  // Read by the provider to find the agent among the node's processes.
  log::ok(fs::atomic_write_file(node::kAgentPidFile, std::to_string(pid) + "\n"),
          "init: write the agent's pid");
  return pid;
}

}  // namespace

int run_as_node_init(const std::function<int(bool)>& agent) {
  sigset_t wanted, old;
  sigemptyset(&wanted);
  for (int s : {SIGCHLD, SIGUSR1, SIGTERM, SIGINT}) sigaddset(&wanted, s);
  ::sigprocmask(SIG_BLOCK, &wanted, &old);

  bool stopping = false;
  pid_t agent_pid = start_agent(agent, false, old);
  auto started = Clock::now();
  int agent_status = 0;
  while (true) {
    timespec tick{0, 200 * 1000 * 1000};
    int sig = ::sigtimedwait(&wanted, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      stopping = true;
      if (agent_pid > 0) ::kill(agent_pid, SIGTERM);
    } else if (sig == SIGUSR1 && agent_pid > 0) {
      log::warn("init: endured asked for the agent to be restarted");
      ::kill(agent_pid, SIGKILL);  // it may be stopped or stuck: only SIGKILL is sure
    }
    // Every orphan of the node is ours to reap; the agent is one of our children.
    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
      if (pid == agent_pid) {
        agent_pid = 0;
        agent_status = status;
      }
    }
    if (agent_pid > 0) continue;
    if (stopping) break;
    if (Clock::now() - started < kMinRestartGap) continue;  // started again at a later tick
    log::warn("init: the agent ended ({}); starting it again",
              WIFSIGNALED(agent_status) ? "signal " + std::to_string(WTERMSIG(agent_status))
                                        : "exit " + std::to_string(WEXITSTATUS(agent_status)));
    agent_pid = start_agent(agent, true, old);
    started = Clock::now();
  }
  return WIFEXITED(agent_status) ? WEXITSTATUS(agent_status) : 1;
}

}  // namespace endure::agent
