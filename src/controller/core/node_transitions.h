// Every change endured makes to a node's row, by name. Each function is pure: it takes what
// the change needs and returns a NodeChange, which says what the change does to the row as
// stored and which events go with it. apply() (transition.h) runs it in one transaction,
// on the row as stored, checked against the transition table (node_state.h); the managers
// decide which change to make, and only these functions edit a row's state.
//
// tests/unit/controller/core/node_transitions_test.cpp states, for each one, the row it
// makes and its events.
#pragma once

#include <functional>
#include <string>

#include "common/json.h"
#include "controller/core/node_decisions.h"
#include "controller/core/node_state.h"
#include "store/store.h"

namespace endure::controller {

struct NodeChange {
  const char* name = "";  // the function that made it: "request_recovery", ...
  store::Store::InstanceEvents events;
  std::function<void(store::InstanceRow&)> edit;

  // The row this change makes of `row`.
  store::InstanceRow applied_to(store::InstanceRow row) const {
    if (edit) edit(row);
    return row;
  }
};

// --- Launch (node_launcher.cpp, reconciler.cpp) ---

// The provider started the instance: its host pid, with InstanceLaunched.
NodeChange record_launch(int pid);
// Found running after a controller restart that had not recorded it: InstanceAdopted.
NodeChange adopt(int pid);
// A new pid with no event: a reboot's or a reimage's new first process.
NodeChange record_pid(int pid);
// A word on what the node waits for, in its message; no event, no state change.
NodeChange note(std::string message);
// Its group's host pool has no Available host: NoHostAvailable, `waiting` in its message.
NodeChange wait_for_host(const std::string& pool, std::string waiting);
// OnCreate (or the boot scripts) succeeded and Slurm sees it: in service (Running, or
// WarmSpare for a spare's slot), healthy, any recovery ended; watched from `now`.
// event: InstanceRunning, NodeReturnedToService or WarmSpareReady.
NodeChange return_to_service(bool spare, const std::string& event, const std::string& text,
                             double now);
// The agent reported its lifecycle scripts' outcome.
NodeChange record_lifecycle(const LifecycleChange& change, int exit_code, std::string last_lines);

// --- Shutdown (node_launcher.cpp, reconciler.cpp, recovery_manager.cpp, warm_spares.cpp) ---

// Scale down (InstanceShuttingDown, message cleared) or DeleteCluster (no event).
NodeChange begin_shutdown(bool scale_down);
// The instance is gone: Failure (InstanceFailed) or Terminated (InstanceTerminated), no pid,
// terminated at `now`.
NodeChange retire(NodeStatus final_status, const std::string& message, double now);
// A Replace's old instance is gone: Terminated, its recovery Done (InstanceTerminated).
NodeChange finish_replace(const std::string& reason, double now);
// An unhealthy or silent warm spare was destroyed: Terminated (WarmSpareLost).
NodeChange lose_spare(const std::string& reason, double now);
// A warm spare takes a replaced node's Slurm name and slot (WarmSpareSwappedIn); Pending
// until Slurm sees it so. Its recovery clock is the replaced node's (when the fault was found).
NodeChange swap_in(const std::string& node_name, int slot, const store::InstanceRow& replaced,
                   const std::string& text);

// --- Health (recovery_manager.cpp) ---

// Heartbeats stopped, not yet confirmed dead or hung (NodeSuspect); nothing changes.
NodeChange suspect(const std::string& why);
// Only its agent was silent: restarted, the node left in service (AgentRestarted).
NodeChange agent_restarted(const std::string& why);
NodeChange mark_healthy();
// An operator's Action: reason waits for the node's jobs to end (NodeRecoveryWaiting).
NodeChange wait_for_jobs(const std::string& text);
// Unhealthy under NodeRecovery None: Failure, marked, nothing else done (NodeUnhealthy, and
// NodeDrained when Slurm drained it).
NodeChange mark_failure(const std::string& reason, RecoveryAction action, bool drained, double now);

// --- Recovery (recovery_manager.cpp, deep_check_manager.cpp, software_update_manager.cpp) ---

// A health verdict asks for `action` (NodeUnhealthy): the node is marked unhealthy with
// unhealthy_verdict(reason, action) and its recovery Requested, its clock started at `now`.
NodeChange request_recovery(RecoveryAction action, const std::string& reason, double now);
// BatchRebootClusterNodes / BatchReplaceClusterNodes (NodeRecoveryRequested).
NodeChange operator_request(RecoveryAction action, const std::string& reason, double now);
// Requested -> Drained, with NodeDrained when Slurm drained it.
NodeChange mark_drained(bool drained, const std::string& reason);
// Drained -> Rebooting: Pending again, its boot scripts to run (NodeRebooting).
NodeChange start_reboot(const std::string& reason, double now);
// The reboot did not start, its boot scripts failed or it timed out: a Replace is requested
// (RebootFailed); health, verdict and the recovery clock stay as the reboot left them.
NodeChange reboot_failed(const std::string& why);
// Drained -> Terminating: the instance goes with its local disk (NodeReplacing).
NodeChange mark_replacing(const std::string& reason);

// --- Deep health checks (deep_check_manager.cpp) ---

NodeChange start_deep_check(const std::string& check_id, const json& order,
                            const std::string& text);
// Back to Running, watched afresh from `now`; a failed check requests a Replace
// (DeepHealthCheckFailed, NodeUnhealthy). failed: what failed ("" when it passed).
NodeChange end_deep_check(bool passed, const std::string& summary, const std::string& failed,
                          double now);

// --- UpdateClusterSoftware (software_update_manager.cpp) ---

NodeChange start_update(const std::string& plan_id, double now);
NodeChange finish_update(const std::string& text, double now);
// Its lifecycle scripts failed: Running again with a Replace requested (NodeUnhealthy).
NodeChange fail_update(const std::string& why, double now);

}  // namespace endure::controller
