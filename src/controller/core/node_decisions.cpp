#include "controller/core/node_decisions.h"

#include <fmt/format.h>

namespace endure::controller {

std::optional<LifecycleChange> decide_lifecycle_report(LifecycleStatus current,
                                                       LifecycleStatus reported, int exit_code) {
  using L = LifecycleStatus;
  if (current == L::kSucceeded || current == L::kFailed) return std::nullopt;
  if (current == L::kRebooting && reported == L::kInProgress) return std::nullopt;
  LifecycleChange change{reported, "", "", current != reported};
  if (!change.changed || reported == L::kInProgress) return change;
  bool booting = current == L::kRebooting;
  bool ok = reported == L::kSucceeded;
  change.event = booting ? (ok ? "BootScriptsSucceeded" : "BootScriptsFailed")
                         : (ok ? "LifecycleSucceeded" : "LifecycleFailed");
  change.description = fmt::format("{} {} with exit code {}", booting ? "boot scripts" : "OnCreate",
                                   ok ? "succeeded" : "failed", exit_code);
  return change;
}

namespace {

// Whether a node whose lifecycle succeeded is ready for service, by its role, and what it
// waits for if not.
struct Readiness {
  bool ready = false;
  std::string waiting_for;
  bool resume_in_slurm = false;
};

Readiness ready_for_service(const PendingObservation& seen) {
  Readiness r;
  switch (seen.role) {
    case spec::NodeRole::kController:
      r.ready = seen.controller_up;
      r.waiting_for = "slurmctld to answer";
      break;
    case spec::NodeRole::kWorker: {
      r.waiting_for = "its slurmd to register with slurmctld";
      if (!seen.controller_running || !seen.slurm_node || !seen.slurm_node->registered()) break;
      const auto& node = *seen.slurm_node;
      // A node endured (or an operator's Action:) drained goes back to service now that its
      // new, rebooted or updated instance is up; other drains are the operator's own.
      bool ours =
          node.reason.rfind(kDrainReasonPrefix, 0) == 0 || manual_action(node.reason).has_value();
      r.resume_in_slurm = node.drained() && ours;
      r.ready = true;
      break;
    }
    case spec::NodeRole::kLogin:
      r.ready = true;
      break;
  }
  return r;
}

PendingDecision pending(PendingStep step, std::string text) {
  PendingDecision d;
  d.step = step;
  d.text = std::move(text);
  return d;
}

}  // namespace

PendingDecision decide_pending(const store::InstanceRow& r, const PendingObservation& seen,
                               const PendingLimits& limits) {
  using L = LifecycleStatus;
  auto stage = r.recovery_stage;
  bool rebooting = stage == RecoveryStage::kRebooting;
  // A reboot that failed to start turned into a Replace: the recovery manager owns the node
  // now, and no lifecycle timeout may retire it meanwhile.
  if (r.recovery.has_value() && !rebooting) return {};
  auto lifecycle = r.lifecycle_status;
  if (rebooting &&
      (lifecycle == L::kFailed || seen.now - r.recovery_since > limits.reboot_timeout)) {
    return pending(PendingStep::kRebootFailed,
                   lifecycle == L::kFailed
                       ? "its boot scripts failed: " + r.lifecycle_tail
                       : fmt::format("not back in service {} s after the reboot",
                                     static_cast<int>(limits.reboot_timeout)));
  }
  if (lifecycle == L::kFailed) {
    return pending(PendingStep::kRetire, fmt::format("OnCreate {} script failed with exit code {}",
                                                     r.group, r.lifecycle_exit));
  }
  if (lifecycle != L::kSucceeded) {
    double limit = limits.lifecycle_timeout + 60.0;
    if (!rebooting && r.pid != 0 && seen.now - r.launch_time > limit) {
      return pending(PendingStep::kRetire,
                     fmt::format("no lifecycle outcome within {} s", static_cast<int>(limit)));
    }
    return {};
  }
  PendingDecision run = pending(PendingStep::kRun, "");
  Readiness readiness = ready_for_service(seen);
  run.resume_in_slurm = readiness.resume_in_slurm;
  const bool ready = readiness.ready;
  const std::string& waiting_for = readiness.waiting_for;
  if (ready && seen.spare) {
    run.event = "WarmSpareReady";
    run.text = fmt::format("ready to swap in {:.1f} s after launch", seen.now - r.launch_time);
    return run;
  }
  if (ready) {
    bool recovered = r.recovery.has_value() || !r.replaces.empty();
    std::string how = rebooting ? "rebooted" : (r.replaces.empty() ? "" : "replaced");
    double since = r.recovery_since > 0 ? r.recovery_since : r.launch_time;
    run.event = recovered ? "NodeReturnedToService" : "InstanceRunning";
    run.text = recovered
                   ? fmt::format("{}, back in service {:.1f} s after the fault was found", how,
                                 seen.now - since)
                   : fmt::format("in service {:.1f} s after launch", seen.now - r.launch_time);
    return run;
  }
  if (rebooting) return {};
  // A swapped-in spare waits from its swap (recovery_since: the fault it answers), not
  // from its launch.
  if (seen.now - std::max(r.launch_time, r.recovery_since) >
      limits.lifecycle_timeout + limits.slurm_register_timeout) {
    return pending(PendingStep::kRetire,
                   "lifecycle succeeded but timed out waiting for " + waiting_for);
  }
  if (r.message != "waiting for " + waiting_for) {
    return pending(PendingStep::kWait, "waiting for " + waiting_for);
  }
  return {};
}

HealthDecision decide_health(const store::InstanceRow& row, const HealthObservation& seen) {
  HealthDecision d;
  std::optional<RecoveryAction> action;
  // An operator's Action: reason, honoured as the cloud service does: with jobs on the node
  // (state=fail) it waits for them; a node set down acts at once.
  if (seen.slurm_node) {
    const auto& node = *seen.slurm_node;
    auto manual = manual_action(node.reason);
    if (manual && (node.has_flag("FAIL") || node.drained() || node.down())) {
      if (node.busy() && !node.down()) {
        std::string waiting = node.reason + " requested: waiting for jobs to finish";
        if (row.message == waiting) return d;
        d.step = HealthStep::kWaitForJobs;
        d.text = waiting;
        return d;
      }
      action = manual;
      d.reason = node.reason + " set in Slurm";
    }
  }
  if (!action) {
    if (!seen.verdict) {
      // endured's drain on a node in service with no recovery under way is one whose resume
      // was lost (slurmctld killed before it saved its state comes back with the drain):
      // left, the node would never take a job again. Slurm refuses to resume a node it has
      // not heard from since it started, so that waits for its slurmd to register.
      const auto& node = seen.slurm_node;
      if (node && node->drained() && !seen.update_under_way &&
          node->reason.rfind(kDrainReasonPrefix, 0) == 0 && node->state != "unknown" &&
          !node->has_flag("NOT_RESPONDING")) {
        d.step = HealthStep::kResume;
        return d;
      }
      if (row.health != Health::kHealthy) d.step = HealthStep::kMarkHealthy;
      return d;
    }
    action = escalate(action_for_fault(seen.verdict->fault), row.reboots);
    d.reason = std::string(api::name(seen.verdict->fault)) + ": " + seen.verdict->detail;
  }
  // The controller keeps Slurm's state on its local disk: it is rebooted, never replaced.
  d.action = seen.is_controller ? RecoveryAction::kReboot : *action;
  d.verdict = unhealthy_verdict(d.reason, d.action);
  d.step = seen.recovery_enabled ? HealthStep::kRecover : HealthStep::kMarkFailure;
  return d;
}

RecoveryStep next_recovery_step(std::optional<RecoveryAction> recovery, RecoveryStage stage) {
  switch (stage) {
    case RecoveryStage::kRequested:
      return RecoveryStep::kDrain;
    case RecoveryStage::kDrained:
      if (recovery == RecoveryAction::kReboot) return RecoveryStep::kReboot;
      return recovery == RecoveryAction::kReplace ? RecoveryStep::kMarkReplacing
                                                  : RecoveryStep::kNone;
    case RecoveryStage::kTerminating:
      return recovery == RecoveryAction::kReplace ? RecoveryStep::kDestroy : RecoveryStep::kNone;
    default:
      return RecoveryStep::kNone;
  }
}

DeepCheckOutcome decide_deep_check(const json& results, int timeout_seconds) {
  DeepCheckOutcome out;
  if (!results.is_array()) {
    out.failed = fmt::format("no result within {} s", timeout_seconds);
    return out;
  }
  for (const auto& r : results) {
    if (r.value("Passed", false)) continue;
    out.failed +=
        (out.failed.empty() ? "" : "; ") + r.value("Check", "?") + ": " + r.value("Detail", "");
  }
  out.passed = out.failed.empty();
  if (!out.passed) return out;
  for (const auto& r : results) {
    out.summary += (out.summary.empty() ? "" : ", ") + r.value("Check", "?") + " " +
                   r.value("Metrics", json()).dump();
  }
  return out;
}

UpdateDecision decide_update(const store::InstanceRow* row, const std::string& instance_id,
                             const PendingObservation& seen, const PendingLimits& limits) {
  UpdateDecision d;
  if (!row || row->instance_id != instance_id || row->terminated_at > 0) {
    d.step = UpdateStep::kDone;
    return d;
  }
  const bool worker = seen.role == spec::NodeRole::kWorker;
  if (row->status == NodeStatus::kRunning) {
    if (row->recovery.has_value()) return d;  // a recovery first; it may end in a new instance
    if (worker) {
      if (!seen.slurm_node) return d;
      if (!seen.slurm_node->drained()) {
        d.step = UpdateStep::kDrain;
        return d;
      }
      if (seen.slurm_node->busy()) {
        d.step = UpdateStep::kWaitForJobs;
        d.text = "waiting for its jobs to end before its software update";
        return d;
      }
    }
    d.step = UpdateStep::kStart;
    return d;
  }
  if (row->status != NodeStatus::kSystemUpdating) return d;
  if (row->pid == 0) {
    d.step = UpdateStep::kReimage;
    return d;
  }
  auto lifecycle = row->lifecycle_status;
  if (lifecycle == LifecycleStatus::kFailed) {
    d.step = UpdateStep::kFail;
    d.text = "OnCreate failed on the new software: " + row->lifecycle_tail;
    return d;
  }
  double limit = limits.lifecycle_timeout + limits.slurm_register_timeout;
  if (seen.now - row->recovery_since > limit) {
    d.step = UpdateStep::kFail;
    d.text =
        fmt::format("not back in service {} s after its software update", static_cast<int>(limit));
    return d;
  }
  if (lifecycle != LifecycleStatus::kSucceeded) return d;
  Readiness readiness = ready_for_service(seen);
  if (!readiness.ready) return d;
  d.step = UpdateStep::kFinish;
  // The update drained it: whatever the reason now reads, the update undoes its drain.
  d.resume_in_slurm = worker && seen.slurm_node->drained();
  return d;
}

PendingLimits pending_limits(const Config& config) {
  return {static_cast<double>(config.reboot_timeout_seconds),
          static_cast<double>(config.lifecycle_timeout_seconds),
          static_cast<double>(config.slurm_register_timeout_seconds)};
}

// --- A silent node ---

bool is_suspect(double silent_for, const SilenceLimits& limits) {
  return silent_for >= limits.suspect_after;
}

SilenceLimits silence_limits(const Config& config) {
  return {config.suspect_after_seconds, config.heartbeat_timeout_seconds,
          config.heartbeat_timeout_seconds};
}

SilenceDecision decide_silence(const SilenceObservation& seen, const SilenceLimits& limits) {
  using provider::AgentState;
  using provider::MachineState;
  if (!is_suspect(seen.silent_for, limits)) return {};
  const std::string silence = fmt::format("no heartbeat for {:.1f} s", seen.silent_for);
  const std::string probed = seen.probe.detail.empty() ? "" : " (" + seen.probe.detail + ")";
  switch (seen.probe.machine) {
    case MachineState::kGone:
      return {SilenceStep::kVerdict, api::FaultKind::kCrash,
              "every process of the instance is gone" + probed};
    case MachineState::kStopped:
      return {SilenceStep::kVerdict, api::FaultKind::kHang,
              silence + "; every process of the node is stopped" + probed};
    case MachineState::kAlive:
    case MachineState::kUnknown:
      break;
  }
  if (seen.probe.agent == AgentState::kRunnable) {
    return {SilenceStep::kWait, std::nullopt,
            silence + "; the agent is runnable: starved of CPU, not dead" + probed};
  }
  bool restart_allowed =
      seen.probe.machine == MachineState::kAlive &&
      (seen.since_agent_restart < 0 || seen.since_agent_restart >= limits.agent_restart_gap);
  if (seen.daemon_answers.value_or(false)) {
    if (restart_allowed) {
      return {SilenceStep::kRestartAgent, std::nullopt,
              silence + " while Slurm's daemon answers: the agent alone is silent" + probed};
    }
    return {SilenceStep::kWait, std::nullopt,
            silence + "; Slurm's daemon answers: the node is alive" + probed};
  }
  // Nothing answers from a node the provider cannot call dead or hung.
  if (seen.silent_for >= limits.hang_after) {
    return {SilenceStep::kVerdict, api::FaultKind::kHang,
            silence + "; neither the agent nor Slurm's daemon answers" + probed};
  }
  if (restart_allowed) {
    return {SilenceStep::kRestartAgent, std::nullopt,
            silence + "; Slurm's daemon does not answer either" + probed};
  }
  return {SilenceStep::kWait, std::nullopt, silence + "; nothing answers yet" + probed};
}

}  // namespace endure::controller
