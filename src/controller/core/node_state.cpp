#include "controller/core/node_state.h"

#include <fmt/format.h>

#include <algorithm>

namespace endure::controller {
namespace {

using S = NodeStatus;
using G = RecoveryStage;
using L = LifecycleStatus;

NodeState st(NodeStatus status, RecoveryStage stage = RecoveryStage::kNone) {
  return NodeState{status, stage};
}

std::vector<NodeTransition> build_node_transitions() {
  std::vector<NodeTransition> t = {
      // Creation (reconciler.cpp: fill_slots, launch_pending, advance_pending).
      {std::nullopt, st(S::kPending), "InstanceLaunching",
       "an empty slot gets a new instance (first launch, retry, or replacement)"},
      {st(S::kPending), st(S::kPending), "InstanceLaunched",
       "the provider started it: pid recorded"},
      {st(S::kPending), st(S::kPending), "InstanceAdopted",
       "found running after a controller restart: pid recorded"},
      {st(S::kPending), st(S::kPending), "NoHostAvailable",
       "its group's host pool has no Available host: it waits for one"},
      {st(S::kPending), st(S::kFailure), "InstanceFailed",
       "launch or OnCreate failed, no outcome or no Slurm registration in time, or the cluster "
       "failed"},
      {st(S::kPending), st(S::kRunning), "InstanceRunning",
       "OnCreate succeeded and Slurm sees the node"},
      {st(S::kPending), st(S::kRunning), "NodeReturnedToService",
       "a replacement instance is in service"},
      // Warm spares (reconciler.cpp: advance_pending; warm_spares.cpp).
      {st(S::kPending), st(S::kWarmSpare), "WarmSpareReady",
       "a spare's OnCreate succeeded and Slurm sees it, in no partition"},
      {st(S::kWarmSpare), st(S::kPending), "WarmSpareSwappedIn",
       "it took a replaced worker's Slurm name; in service once Slurm sees it so"},
      {st(S::kWarmSpare), st(S::kTerminated), "WarmSpareLost",
       "an unhealthy or silent spare is destroyed (its host set aside); its slot fills again"},
      // Health (recovery_manager.cpp: judge, request).
      {st(S::kRunning), st(S::kRunning), "NodeRecoveryWaiting",
       "an operator's Action: reason waits for the node's jobs to finish"},
      {st(S::kRunning), st(S::kRunning), "NodeSuspect",
       "heartbeats stopped: confirmed neither dead nor hung yet (a CPU-starved agent)"},
      {st(S::kRunning), st(S::kRunning), "AgentRestarted",
       "the agent alone went silent on a live node: restarted, the node left in service"},
      {st(S::kRunning), st(S::kFailure), "NodeUnhealthy",
       "unhealthy under NodeRecovery None: marked and drained, nothing else done"},
      {st(S::kRunning), st(S::kRunning, G::kRequested), "NodeUnhealthy",
       "a health verdict or an Action: reason asks for a Reboot or a Replace"},
      {st(S::kRunning), st(S::kRunning, G::kRequested), "NodeRecoveryRequested",
       "BatchRebootClusterNodes or BatchReplaceClusterNodes"},
      // Deep health checks (deep_check_manager.cpp: start, reconcile).
      {st(S::kRunning), st(S::kDeepHealthCheckInProgress), "DeepHealthCheckStarted",
       "StartClusterHealthCheck: the node sits in a maintenance reservation"},
      {st(S::kDeepHealthCheckInProgress), st(S::kRunning), "DeepHealthCheckPassed",
       "every check passed"},
      {st(S::kDeepHealthCheckInProgress), st(S::kRunning, G::kRequested), "DeepHealthCheckFailed",
       "a check failed or none reported in time: Replace"},
      // Recovery (recovery_manager.cpp: act, drain, reboot; reconciler.cpp: advance_pending).
      {st(S::kRunning, G::kRequested), st(S::kRunning, G::kDrained), "NodeDrained",
       "a worker is set down and drained in Slurm"},
      {st(S::kRunning, G::kRequested), st(S::kRunning, G::kDrained), "",
       "not a worker, or the drain failed: the stage moves on without an event"},
      {st(S::kRunning, G::kDrained), st(S::kPending, G::kRebooting), "NodeRebooting",
       "Reboot: the node restarts and runs its boot scripts"},
      {st(S::kPending, G::kRebooting), st(S::kRunning), "NodeReturnedToService",
       "the boot scripts succeeded and Slurm sees the node again"},
      {st(S::kPending, G::kRebooting), st(S::kPending, G::kRequested), "RebootFailed",
       "the reboot did not start, its boot scripts failed, or it timed out: Replace"},
      {st(S::kPending, G::kRequested), st(S::kPending, G::kDrained), "NodeDrained",
       "a worker whose reboot failed is drained again before it is replaced"},
      {st(S::kPending, G::kRequested), st(S::kPending, G::kDrained), "",
       "as above, not a worker or the drain failed, or the node still drained from before"},
      {st(S::kRunning, G::kDrained), st(S::kShuttingDown, G::kTerminating), "NodeReplacing",
       "Replace: the instance goes with its local disk"},
      {st(S::kPending, G::kDrained), st(S::kShuttingDown, G::kTerminating), "NodeReplacing",
       "Replace after a failed reboot"},
      {st(S::kShuttingDown, G::kTerminating), st(S::kTerminated, G::kDone), "InstanceTerminated",
       "replaced: the slot is filled again under the same hostname"},
  };
  // A failing cluster retires every Pending row, a reboot under way included
  // (reconciler.cpp: fail_cluster); the stage stays as it was.
  for (G stage : {G::kRebooting, G::kRequested, G::kDrained}) {
    t.push_back({st(S::kPending, stage), st(S::kFailure, stage), "InstanceFailed",
                 "the cluster failed while a recovery was under way"});
  }
  // Scale down and DeleteCluster shut down any live row, keeping its stage
  // (reconciler.cpp: remove_extra_instances, delete_cluster, retire_instance).
  const NodeState live[] = {{S::kPending},
                            {S::kRunning},
                            {S::kWarmSpare},
                            {S::kDeepHealthCheckInProgress},
                            {S::kFailure},         // NodeRecovery None leaves it live
                            {S::kSystemUpdating},  // once UpdateClusterSoftware exists
                            {S::kRunning, G::kRequested},
                            {S::kRunning, G::kDrained},
                            {S::kPending, G::kRebooting},
                            {S::kPending, G::kRequested},
                            {S::kPending, G::kDrained}};
  for (const NodeState& from : live) {
    NodeState to{S::kShuttingDown, from.stage};
    t.push_back({from, to, "InstanceShuttingDown", "scale down: its slot left the spec"});
    t.push_back({from, to, "", "DeleteCluster: every live instance shuts down, without an event"});
  }
  for (G stage : {G::kNone, G::kRequested, G::kDrained, G::kRebooting, G::kTerminating}) {
    t.push_back({st(S::kShuttingDown, stage), st(S::kTerminated, stage), "InstanceTerminated",
                 "scale down or DeleteCluster removed it"});
  }
  // UpdateClusterSoftware (not written yet): a new root volume, then OnCreate again.
  t.push_back({st(S::kRunning), st(S::kSystemUpdating), "NodeUpdating",
               "UpdateClusterSoftware patches the node"});
  t.push_back({st(S::kSystemUpdating), st(S::kRunning), "NodeUpdated",
               "the update and its lifecycle scripts succeeded"});
  t.push_back({st(S::kSystemUpdating), st(S::kRunning, G::kRequested), "NodeUnhealthy",
               "the update's lifecycle scripts failed: Replace"});
  return t;
}

std::string state_text(const std::optional<NodeState>& state) {
  return state ? to_string(*state) : "a new row";
}

// The Mermaid id of a state: "Running", "Running_Requested".
std::string mermaid_id(const NodeState& s) {
  std::string id = name(s.status);
  if (s.stage != RecoveryStage::kNone) id += std::string("_") + name(s.stage);
  return id;
}

std::string edge_label(const char* event) { return *event ? event : "no event"; }

}  // namespace

std::optional<NodeState> parse_node_state(std::string_view status, std::string_view stage) {
  auto s = parse_node_status(status);
  auto g = parse_recovery_stage(stage);
  if (!s || !g) return std::nullopt;
  return NodeState{*s, *g};
}

std::string to_string(const NodeState& state) {
  std::string text = name(state.status);
  if (state.stage != RecoveryStage::kNone) text += std::string("/") + name(state.stage);
  return text;
}

std::string status_text(NodeStatus status, std::optional<RecoveryAction> recovery) {
  std::string text = name(status);
  if (recovery) text += std::string(" (") + name(*recovery) + " under way)";
  return text;
}

bool is_final(NodeStatus status) {
  return status == NodeStatus::kTerminated || status == NodeStatus::kFailure;
}

const std::vector<NodeTransition>& node_transitions() {
  static const std::vector<NodeTransition> table = build_node_transitions();
  return table;
}

Status check_transition(std::optional<NodeState> from, NodeState to,
                        const std::string& first_event) {
  if (from == to && first_event.empty()) return {};
  for (const auto& t : node_transitions()) {
    if (t.from == from && t.to == to && first_event == t.event) return {};
  }
  return make_error("InvalidTransition",
                    fmt::format("{} -> {} with event '{}' is not a node transition (see "
                                "src/controller/core/node_state.cpp)",
                                state_text(from), state_text(to), first_event));
}

const std::vector<LifecycleTransition>& lifecycle_transitions() {
  static const std::vector<LifecycleTransition> table = {
      {L::kNotStarted, L::kInProgress, "", "the agent started OnCreate"},
      {L::kNotStarted, L::kSucceeded, "LifecycleSucceeded",
       "the agent reported the outcome at once"},
      {L::kNotStarted, L::kFailed, "LifecycleFailed", "the agent reported the outcome at once"},
      {L::kInProgress, L::kSucceeded, "LifecycleSucceeded", "OnCreate exited 0"},
      {L::kInProgress, L::kFailed, "LifecycleFailed", "OnCreate failed or timed out"},
      {L::kSucceeded, L::kRebooting, "NodeRebooting", "Reboot: the boot scripts run again"},
      {L::kRebooting, L::kSucceeded, "BootScriptsSucceeded", "the node is back up"},
      {L::kRebooting, L::kFailed, "BootScriptsFailed", "the reboot failed: Replace follows"},
      {L::kSucceeded, L::kNotStarted, "NodeUpdating",
       "UpdateClusterSoftware: a new root volume runs OnCreate again"},
  };
  return table;
}

Status check_lifecycle_transition(LifecycleStatus from, LifecycleStatus to,
                                  const std::string& event) {
  if (from == to && event.empty()) return {};
  for (const auto& t : lifecycle_transitions()) {
    if (t.from == from && t.to == to && event == t.event) return {};
  }
  return make_error("InvalidTransition",
                    fmt::format("lifecycle {} -> {} with event '{}' is not a lifecycle transition "
                                "(see src/controller/core/node_state.cpp)",
                                name(from), name(to), event));
}

std::string node_state_diagram() {
  std::vector<NodeState> seen;  // first appearance order
  auto note = [&](const NodeState& s) {
    if (std::find(seen.begin(), seen.end(), s) == seen.end()) seen.push_back(s);
  };
  for (const auto& t : node_transitions()) {
    if (t.from) note(*t.from);
    note(t.to);
  }
  std::string out = "stateDiagram-v2\n";
  for (const auto& s : seen) {
    if (s.stage != RecoveryStage::kNone) {
      out += fmt::format("  {}: {} / {}\n", mermaid_id(s), name(s.status), name(s.stage));
    }
  }
  for (const auto& t : node_transitions()) {
    out += fmt::format("  {} --> {}: {}\n", t.from ? mermaid_id(*t.from) : "[*]", mermaid_id(t.to),
                       edge_label(t.event));
  }
  for (const auto& s : seen) {
    if (is_final(s.status)) out += fmt::format("  {} --> [*]\n", mermaid_id(s));
  }
  return out;
}

std::string lifecycle_diagram() {
  std::string out = "stateDiagram-v2\n";
  out += fmt::format("  [*] --> {}\n", name(LifecycleStatus::kNotStarted));
  for (const auto& t : lifecycle_transitions()) {
    out += fmt::format("  {} --> {}: {}\n", name(t.from), name(t.to), edge_label(t.event));
  }
  // A failed lifecycle ends the instance: it is retired or replaced, never run again.
  out += fmt::format("  {} --> [*]\n", name(LifecycleStatus::kFailed));
  return out;
}

}  // namespace endure::controller
