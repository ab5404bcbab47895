#include "slurm/slurm_client.h"

#include <algorithm>
#include <thread>

#include "common/json.h"

namespace endure::slurm {
namespace {

using namespace std::chrono_literals;

Error command_error(const std::string& what, const process::Output& out) {
  std::string detail = out.timed_out ? "timed out" : "exit " + std::to_string(out.exit_code);
  std::string text = out.err.empty() ? out.out : out.err;
  if (text.size() > 400) text = text.substr(text.size() - 400);
  return make_error("SlurmError", what + " failed (" + detail + "): " + text);
}

}  // namespace

bool NodeState::in_service() const {
  static const char* kBad[] = {"NOT_RESPONDING", "DRAIN", "FAIL", "POWERED_DOWN", "REBOOT_REQUESTED"};
  if (state != "idle" && state != "allocated" && state != "mixed") return false;
  for (const auto& f : flags) {
    for (const char* bad : kBad) {
      if (f == bad) return false;
    }
  }
  return true;
}

bool NodeState::has_flag(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool NodeState::registered() const {
  return state != "down" && state != "unknown" && state != "future" && !has_flag("NOT_RESPONDING");
}

Status SlurmClient::down_and_drain(const std::string& node, const std::string& reason) const {
  auto down = run_({"scontrol", "update", "nodename=" + node, "state=down", "reason=" + reason}, 15s);
  if (down.exit_code != 0) return command_error("scontrol update state=down " + node, down);
  return drain(node, reason);
}

Status SlurmClient::drain(const std::string& node, const std::string& reason) const {
  auto out = run_({"scontrol", "update", "nodename=" + node, "state=drain", "reason=" + reason}, 15s);
  if (out.exit_code != 0) return command_error("scontrol update state=drain " + node, out);
  return {};
}

Status SlurmClient::resume(const std::string& node) const {
  auto out = run_({"scontrol", "update", "nodename=" + node, "state=resume"}, 15s);
  if (out.exit_code != 0) return command_error("scontrol update state=resume " + node, out);
  return {};
}

Status SlurmClient::create_maintenance_reservation(const std::string& name,
                                                   const std::vector<std::string>& nodes) const {
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ",") + n;
  auto out = run_({"scontrol", "create", "reservation", "ReservationName=" + name, "Nodes=" + list,
                   "StartTime=now", "Duration=UNLIMITED", "Users=root", "Flags=MAINT,IGNORE_JOBS"},
                  15s);
  if (out.exit_code != 0) return command_error("scontrol create reservation " + name, out);
  return {};
}

Status SlurmClient::delete_reservation(const std::string& name) const {
  auto out = run_({"scontrol", "delete", "reservation=" + name}, 15s);
  if (out.exit_code != 0 && out.err.find("not found") == std::string::npos &&
      out.err.find("Invalid") == std::string::npos) {
    return command_error("scontrol delete reservation " + name, out);
  }
  return {};
}

Result<std::vector<NodeState>> SlurmClient::nodes() const {
  auto out = run_({"sinfo", "--json"}, 15s);
  if (out.exit_code != 0) return command_error("sinfo --json", out);
  auto doc = json::parse(out.out, nullptr, false);
  if (!doc.is_object() || !doc.contains("nodes")) {
    return make_error("SlurmError", "sinfo --json: unexpected output");
  }
  std::vector<NodeState> nodes;
  for (const auto& n : doc["nodes"]) {
    NodeState s;
    s.name = n.value("name", "");
    s.state = n.value("state", "");
    if (n.contains("state_flags") && n["state_flags"].is_array()) {
      for (const auto& f : n["state_flags"]) s.flags.push_back(f.get<std::string>());
    }
    s.reason = n.value("reason", "");
    // sinfo lists a node once per partition it is in.
    if (std::none_of(nodes.begin(), nodes.end(), [&](auto& x) { return x.name == s.name; })) {
      nodes.push_back(std::move(s));
    }
  }
  return nodes;
}

bool SlurmClient::controller_up() const {
  auto out = run_({"scontrol", "ping"}, 15s);
  return out.exit_code == 0 && out.out.find("is UP") != std::string::npos;
}

Status SlurmClient::reconfigure() const {
  auto out = run_({"scontrol", "reconfigure"}, 30s);
  if (out.exit_code != 0) return command_error("scontrol reconfigure", out);
  return {};
}

Status SlurmClient::restart_controller() const {
  // Stop: ask it to save state and exit, then wait until its process is gone.
  run_({"scontrol", "shutdown", "slurmctld"}, 30s);
  auto gone = run_({"/bin/bash", "-c",
                    "for i in $(seq 200); do "
                    "p=$(cat /run/slurm/slurmctld.pid 2>/dev/null) || exit 0; "
                    "[ -n \"$p\" ] && [ -d /proc/$p ] || exit 0; sleep 0.1; done; exit 1"},
                   30s);
  if (gone.exit_code != 0) return command_error("waiting for slurmctld to stop", gone);
  auto start = run_({"slurmctld"}, 30s);
  if (start.exit_code != 0) return command_error("slurmctld", start);
  for (int i = 0; i < 100; ++i) {
    if (controller_up()) return {};
    std::this_thread::sleep_for(200ms);
  }
  return make_error("SlurmError", "slurmctld did not answer within 20 s of its restart");
}

}  // namespace endure::slurm
