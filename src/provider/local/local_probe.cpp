// The local provider's second opinion on a silent node: its processes' states from the
// host's /proc, and a way to restart its agent (SIGUSR1 to the node's init).
#include <fmt/format.h>
#include <signal.h>

#include "api/node_contract.h"
#include "common/fs.h"
#include "provider/local/local_provider.h"
#include "provider/local/namespace_processes.h"

namespace endure::provider {

namespace {

bool is_stopped(char state) { return state == 'T' || state == 't'; }
bool is_ended(char state) { return state == 0 || state == 'Z' || state == 'X'; }

}  // namespace

NodeProbe LocalProvider::probe(const std::string& cluster_id, const std::string& instance_id) {
  NodeProbe out;
  int init = pid(cluster_id, instance_id);
  if (init <= 0) {
    out.machine = MachineState::kGone;
    out.agent = AgentState::kGone;
    out.detail = "no process of the instance is left";
    return out;
  }
  int agent_in_node = 0;
  if (auto text = fs::read_file(node_path(cluster_id, instance_id, node::kAgentPidFile))) {
    agent_in_node = std::atoi(text->c_str());
  }
  int live = 0, stopped = 0;
  char agent_state = 0;
  for (int p : processes_in_namespace_of(init)) {
    char state = process_state(p);
    if (is_ended(state)) continue;
    ++live;
    if (is_stopped(state)) ++stopped;
    if (agent_in_node > 0 && pid_in_own_namespace(p) == agent_in_node) agent_state = state;
  }
  if (live == 0) {
    out.machine = MachineState::kGone;
  } else if (stopped == live) {
    out.machine = MachineState::kStopped;
  } else {
    out.machine = MachineState::kAlive;
  }
  if (is_ended(agent_state)) {
    out.agent = AgentState::kGone;
  } else if (is_stopped(agent_state)) {
    out.agent = AgentState::kStopped;
  } else if (agent_state == 'R') {
    out.agent = AgentState::kRunnable;
  } else {
    out.agent = AgentState::kSleeping;
  }
  out.detail =
      fmt::format("{} processes, {} stopped; agent {}", live, stopped, to_string(out.agent));
  return out;
}

Status LocalProvider::restart_agent(const std::string& cluster_id, const std::string& instance_id) {
  // pid() reads the pid under the instance's lock: it is still the node's init.
  int init = pid(cluster_id, instance_id);
  if (init <= 0) return make_error("ProviderError", instance_id + " is not running");
  if (::kill(init, SIGUSR1) != 0) return local_io_error("signal the init of " + instance_id);
  return {};
}

}  // namespace endure::provider
