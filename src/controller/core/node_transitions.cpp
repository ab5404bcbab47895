#include "controller/core/node_transitions.h"

#include <utility>

namespace endure::controller {
namespace {

using S = NodeStatus;

// The one place a recovery is asked for: the action, why, and its first stage.
void ask_for(store::InstanceRow& x, RecoveryAction action, const std::string& reason) {
  x.recovery = action;
  x.recovery_reason = reason;
  x.recovery_stage = RecoveryStage::kRequested;
}

// The one place a node is judged unhealthy.
void judge_unhealthy(store::InstanceRow& x, const std::string& verdict, double now) {
  x.health = Health::kUnhealthy;
  x.last_verdict = verdict;
  x.verdict_time = now;
}

// The one place an instance ends: its final status, why, and no process left.
void end_instance(store::InstanceRow& x, NodeStatus status, std::string message, double now) {
  x.status = status;
  x.message = std::move(message);
  x.pid = 0;
  x.terminated_at = now;
}

// A verdict's recovery, from `now`: judged, then asked for.
void recover(store::InstanceRow& x, RecoveryAction action, const std::string& reason, double now) {
  judge_unhealthy(x, unhealthy_verdict(reason, action), now);
  ask_for(x, action, reason);
  x.recovery_since = now;
}

}  // namespace

NodeChange record_launch(int pid) {
  return {"record_launch",
          {{"InstanceLaunched", "host pid " + std::to_string(pid)}},
          [pid](store::InstanceRow& x) { x.pid = pid; }};
}

NodeChange adopt(int pid) {
  return {"adopt",
          {{"InstanceAdopted", "found running after a controller restart"}},
          [pid](store::InstanceRow& x) { x.pid = pid; }};
}

NodeChange record_pid(int pid) {
  return {"record_pid", {}, [pid](store::InstanceRow& x) { x.pid = pid; }};
}

NodeChange note(std::string message) {
  return {
      "note", {}, [message = std::move(message)](store::InstanceRow& x) { x.message = message; }};
}

NodeChange wait_for_host(const std::string& pool, std::string waiting) {
  return {"wait_for_host",
          {{"NoHostAvailable", "pool " + pool + " has no Available host left"}},
          [waiting = std::move(waiting)](store::InstanceRow& x) { x.message = waiting; }};
}

NodeChange return_to_service(bool spare, const std::string& event, const std::string& text,
                             double now) {
  return {"return_to_service", {{event, text}}, [spare, now](store::InstanceRow& x) {
            x.status = spare ? S::kWarmSpare : S::kRunning;
            x.message = "";
            x.health = Health::kHealthy;
            x.recovery = std::nullopt;
            x.recovery_stage = RecoveryStage::kNone;
            x.recovery_since = now;  // watched from here on
          }};
}

NodeChange record_lifecycle(const LifecycleChange& change, int exit_code, std::string last_lines) {
  store::Store::InstanceEvents events;
  if (!change.event.empty()) events.push_back({change.event, change.description});
  return {"record_lifecycle", std::move(events),
          [to = change.to, exit_code, tail = std::move(last_lines)](store::InstanceRow& x) {
            x.lifecycle_status = to;
            x.lifecycle_exit = exit_code;
            x.lifecycle_tail = tail;
          }};
}

NodeChange begin_shutdown(bool scale_down) {
  if (!scale_down) {
    return {"begin_shutdown", {}, [](store::InstanceRow& x) { x.status = S::kShuttingDown; }};
  }
  return {"begin_shutdown",
          {{"InstanceShuttingDown", "slot left the spec (scale down)"}},
          [](store::InstanceRow& x) {
            x.status = S::kShuttingDown;
            x.message = "";
          }};
}

NodeChange retire(NodeStatus final_status, const std::string& message, double now) {
  const char* event = final_status == S::kFailure ? "InstanceFailed" : "InstanceTerminated";
  return {"retire", {{event, message}}, [final_status, message, now](store::InstanceRow& x) {
            end_instance(x, final_status, message, now);
          }};
}

NodeChange finish_replace(const std::string& reason, double now) {
  std::string message = "replaced: " + reason;
  return {
      "finish_replace", {{"InstanceTerminated", message}}, [message, now](store::InstanceRow& x) {
        end_instance(x, S::kTerminated, message, now);
        x.recovery_stage = RecoveryStage::kDone;
      }};
}

NodeChange lose_spare(const std::string& reason, double now) {
  return {"lose_spare", {{"WarmSpareLost", reason}}, [reason, now](store::InstanceRow& x) {
            end_instance(x, S::kTerminated, "spare lost: " + reason, now);
          }};
}

NodeChange swap_in(const std::string& node_name, int slot, const store::InstanceRow& replaced,
                   const std::string& text) {
  return {"swap_in",
          {{"WarmSpareSwappedIn", text}},
          [node_name, slot, replaced_id = replaced.instance_id,
           since = replaced.recovery_since](store::InstanceRow& x) {
            x.status = S::kPending;
            x.node_name = node_name;
            x.slot = slot;
            x.replaces = replaced_id;
            x.recovery_since = since;  // when the fault was found
            x.message = "swapped in: waiting for Slurm to see it as " + node_name;
          }};
}

NodeChange suspect(const std::string& why) { return {"suspect", {{"NodeSuspect", why}}, {}}; }

NodeChange agent_restarted(const std::string& why) {
  return {"agent_restarted", {{"AgentRestarted", why + ": agent restarted"}}, {}};
}

NodeChange mark_healthy() {
  return {"mark_healthy", {}, [](store::InstanceRow& x) { x.health = Health::kHealthy; }};
}

NodeChange wait_for_jobs(const std::string& text) {
  return {"wait_for_jobs", {{"NodeRecoveryWaiting", text}}, [text](store::InstanceRow& x) {
            x.message = text;
          }};
}

NodeChange mark_failure(const std::string& reason, RecoveryAction action, bool drained,
                        double now) {
  std::string verdict = unhealthy_verdict(reason, action);
  store::Store::InstanceEvents events = {{"NodeUnhealthy", verdict}};
  if (drained) events.push_back({"NodeDrained", "NodeRecovery is None: drained, no action taken"});
  return {"mark_failure", std::move(events), [reason, verdict, now](store::InstanceRow& x) {
            x.status = S::kFailure;
            x.message = reason;
            judge_unhealthy(x, verdict, now);
          }};
}

NodeChange request_recovery(RecoveryAction action, const std::string& reason, double now) {
  return {"request_recovery",
          {{"NodeUnhealthy", unhealthy_verdict(reason, action)}},
          [action, reason, now](store::InstanceRow& x) { recover(x, action, reason, now); }};
}

NodeChange operator_request(RecoveryAction action, const std::string& reason, double now) {
  std::string asked = reason + " -> " + name(action);
  return {"operator_request",
          {{"NodeRecoveryRequested", asked}},
          [action, reason, asked, now](store::InstanceRow& x) {
            ask_for(x, action, reason);
            x.recovery_since = now;
            x.last_verdict = "requested: " + asked;
            x.verdict_time = now;
          }};
}

NodeChange mark_drained(bool drained, const std::string& reason) {
  store::Store::InstanceEvents events;
  if (drained) events.push_back({"NodeDrained", "down and drained in Slurm: " + reason});
  return {"mark_drained", std::move(events),
          [](store::InstanceRow& x) { x.recovery_stage = RecoveryStage::kDrained; }};
}

NodeChange start_reboot(const std::string& reason, double now) {
  return {"start_reboot", {{"NodeRebooting", reason}}, [reason, now](store::InstanceRow& x) {
            x.status = S::kPending;
            x.message = "Rebooting: " + reason;
            x.lifecycle_status = LifecycleStatus::kRebooting;
            x.reboots += 1;
            x.recovery_stage = RecoveryStage::kRebooting;
            x.recovery_since = now;
          }};
}

NodeChange reboot_failed(const std::string& why) {
  return {"reboot_failed", {{"RebootFailed", why}}, [why](store::InstanceRow& x) {
            ask_for(x, RecoveryAction::kReplace, "reboot-failed: " + why);
          }};
}

NodeChange mark_replacing(const std::string& reason) {
  return {"mark_replacing", {{"NodeReplacing", reason}}, [reason](store::InstanceRow& x) {
            x.status = S::kShuttingDown;
            x.message = "Replacing: " + reason;
            x.recovery_stage = RecoveryStage::kTerminating;
          }};
}

NodeChange start_deep_check(const std::string& check_id, const json& order,
                            const std::string& text) {
  return {"start_deep_check",
          {{"DeepHealthCheckStarted", text}},
          [check_id, order](store::InstanceRow& x) {
            x.status = S::kDeepHealthCheckInProgress;
            x.message = "deep health check " + check_id;
            x.deep_check = order;
            x.deep_result = nullptr;
          }};
}

NodeChange end_deep_check(bool passed, const std::string& summary, const std::string& failed,
                          double now) {
  const std::string reason = "deep-health-check: " + failed;
  store::Store::InstanceEvents events =
      passed ? store::Store::InstanceEvents{{"DeepHealthCheckPassed", summary}}
             : store::Store::InstanceEvents{
                   {"DeepHealthCheckFailed", failed},
                   {"NodeUnhealthy", unhealthy_verdict(reason, RecoveryAction::kReplace)}};
  return {"end_deep_check", std::move(events), [passed, reason, now](store::InstanceRow& x) {
            x.status = S::kRunning;
            x.message = "";
            x.deep_check = nullptr;
            x.recovery_since = now;  // watched afresh: the burn may have delayed heartbeats
            if (!passed) recover(x, RecoveryAction::kReplace, reason, now);
          }};
}

NodeChange start_update(const std::string& plan_id, double now) {
  return {"start_update",
          {{"NodeUpdating", "software update " + plan_id}},
          [plan_id, now](store::InstanceRow& x) {
            x.status = S::kSystemUpdating;
            x.message = "software update " + plan_id;
            x.lifecycle_status = LifecycleStatus::kNotStarted;
            x.pid = 0;
            x.recovery_since = now;  // the update's clock
          }};
}

NodeChange finish_update(const std::string& text, double now) {
  return {"finish_update", {{"NodeUpdated", text}}, [now](store::InstanceRow& x) {
            x.status = S::kRunning;
            x.message = "";
            x.health = Health::kHealthy;
            x.recovery_since = now;  // watched from here on
          }};
}

NodeChange fail_update(const std::string& why, double now) {
  const std::string reason = "software-update: " + why;
  return {"fail_update",
          {{"NodeUnhealthy", unhealthy_verdict(reason, RecoveryAction::kReplace)}},
          [reason, now](store::InstanceRow& x) {
            x.status = S::kRunning;
            x.message = "";
            recover(x, RecoveryAction::kReplace, reason, now);
          }};
}

}  // namespace endure::controller
