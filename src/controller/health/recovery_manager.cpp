#include "controller/health/recovery_manager.h"

#include <set>

#include "api/wire.h"
#include "common/crash_point.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/core/node_decisions.h"
#include "controller/core/node_state.h"
#include "controller/core/recovery_policy.h"
#include "controller/core/transition.h"
#include "controller/nodes/into_service.h"
#include "controller/nodes/retirement.h"

namespace endure::controller {

RecoveryManager::RecoveryManager(store::Store& store, provider::NodeProvider& provider,
                                 const Config& config, HealthMonitor& health)
    : store_(store),
      provider_(provider),
      config_(config),
      health_(health),
      silence_(store, provider, config, health) {}

bool RecoveryManager::reconcile(const store::ClusterRow& cluster, const spec::ClusterSpec& spec,
                                const spec::ClusterLayout& layout, SlurmView& slurm) {
  for (const auto& row : store_.instances(cluster.id, true)) {
    if (row.status == NodeStatus::kRunning && !row.recovery)
      judge(cluster, spec, layout, row, slurm);
  }
  bool acted = false;
  // First the reboots: one that failed is acted on below in the same pass, as a Replace.
  const auto rows = store_.instances(cluster.id, true);
  for (const auto& row : rows) {
    if (row.recovery_stage == RecoveryStage::kRebooting && row.status == NodeStatus::kPending) {
      acted = watch_reboot(layout, row, rows, slurm) || acted;
    }
  }
  for (const auto& row : store_.instances(cluster.id, true)) {
    const auto& stage = row.recovery_stage;
    if (stage == RecoveryStage::kRequested || stage == RecoveryStage::kDrained ||
        stage == RecoveryStage::kTerminating) {
      act(cluster, layout, row, slurm);
      acted = true;
    }
  }
  return acted;
}

void RecoveryManager::judge(const store::ClusterRow& cluster, const spec::ClusterSpec& spec,
                            const spec::ClusterLayout& layout, const store::InstanceRow& row,
                            const SlurmView& slurm) {
  HealthObservation seen;
  if (auto it = slurm.nodes.find(row.node_name); it != slurm.nodes.end()) {
    seen.slurm_node = it->second;
  }
  seen.verdict = health_.assess(row.instance_id, provider_.running(cluster.id, row.instance_id));
  if (!seen.verdict) seen.verdict = silence_.confirm(row, row.node_name == layout.controller_node);
  seen.is_controller = row.node_name == layout.controller_node;
  seen.recovery_enabled = spec.node_recovery != "None";
  seen.update_under_way = cluster.status == ClusterStatus::kSystemUpdating;
  HealthDecision d = decide_health(row, seen);
  switch (d.step) {
    case HealthStep::kNothing:
      return;
    case HealthStep::kMarkHealthy:
      (void)apply(store_, row, mark_healthy());
      return;
    case HealthStep::kResume:
      if (slurm.client &&
          log::ok(slurm.client->resume(row.node_name), row.node_name + ": resume")) {
        log::info("{} {}: resumed in Slurm: drained by endured with no recovery under way",
                  row.node_name, row.instance_id);
      }
      return;
    case HealthStep::kWaitForJobs:
      (void)apply(store_, row, wait_for_jobs(d.text));
      return;
    case HealthStep::kMarkFailure: {
      bool drained = slurm.client &&
                     log::ok(slurm.client->drain(row.node_name,
                                                 std::string(kDrainReasonPrefix) + " " + d.reason),
                             row.node_name + ": drain");
      (void)apply(store_, row, mark_failure(d.reason, d.action, drained, ids::now_seconds()));
      return;
    }
    case HealthStep::kRecover:
      (void)apply(store_, row, request_recovery(d.action, d.reason, ids::now_seconds()));
      return;
  }
}

// A recovery moves Requested -> Drained -> Rebooting (Reboot) or Terminating -> Done
// (Replace). Each stage is stored with its event in one transaction, after the effect it
// records: a controller killed at any point redoes at most the effect in flight (a drain, a
// destroy: both idempotent) and never writes an event twice.
void RecoveryManager::act(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                          const store::InstanceRow& row, const SlurmView& slurm,
                          bool drained_already) {
  auto stage = row.recovery_stage;
  for (;;) {
    switch (next_recovery_step(row.recovery, stage)) {
      case RecoveryStep::kNone:
        return;
      case RecoveryStep::kDrain:
        drain(cluster, layout, row, slurm, drained_already);
        crash_point("recovery.after_drain");
        health_.forget(row.instance_id);
        stage = RecoveryStage::kDrained;
        break;
      case RecoveryStep::kReboot: {
        // A reboot that cannot start (a host with its plug pulled) is replaced in the same
        // pass: its node is drained already.
        if (!reboot(cluster, row)) return;
        if (auto fresh = store_.instance(row.instance_id)) act(cluster, layout, *fresh, slurm, true);
        return;
      }
      case RecoveryStep::kMarkReplacing: {
        if (!apply(store_, row, mark_replacing(row.recovery_reason))) return;
        stage = RecoveryStage::kTerminating;
        break;
      }
      case RecoveryStep::kDestroy:
        // The old instance goes with its local disk (and its machine, where machines are
        // reused, is set aside); the reconciler fills the slot again under the same
        // hostname, with a new InstanceId.
        Retirement how{finish_replace(row.recovery_reason, ids::now_seconds())};
        how.set_aside = row.recovery_reason;
        how.crash_point_after_effect = "recovery.after_terminate";
        (void)retire_instance(store_, provider_, health_, row, how);
        return;  // on a provider error, tried again next pass
    }
  }
}

bool RecoveryManager::watch_reboot(const spec::ClusterLayout& layout,
                                   const store::InstanceRow& row,
                                   const std::vector<store::InstanceRow>& rows, SlurmView& slurm) {
  const auto* slot = layout.find(row.node_name);
  if (!slot) return false;
  const double now = ids::now_seconds();
  PendingDecision d = decide_pending(row, observe_pending(rows, layout, *slot, row, slurm, now),
                                     pending_limits(config_));
  switch (d.step) {
    case PendingStep::kNothing:
    case PendingStep::kRetire:  // a new node's, never a rebooting one's
      return false;
    case PendingStep::kWait:
      (void)apply(store_, row, note(d.text));
      return false;
    case PendingStep::kRebootFailed:
      (void)apply(store_, row, reboot_failed(d.text));
      return false;
    case PendingStep::kRun:
      return enter_service(store_, provider_, row, slot->spare, d, slurm, now).ok();
  }
  return false;
}

void RecoveryManager::drain(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                            const store::InstanceRow& row, const SlurmView& slurm,
                            bool drained_already) {
  const auto* slot = layout.find(row.node_name);
  bool worker = slot && slot->role == spec::NodeRole::kWorker;
  bool drained = false;
  // A reboot that failed leaves its node as its first drain left it: down and drained, its
  // jobs handed to auto-resume already. Nothing to do again on the way to a Replace.
  auto seen = slurm.nodes.find(row.node_name);
  bool still_drained = drained_already || (row.status == NodeStatus::kPending &&
                                           seen != slurm.nodes.end() && seen->second.drained() &&
                                           seen->second.reason.rfind(kDrainReasonPrefix, 0) == 0);
  if (worker && slurm.client && !still_drained) {
    // Taken before the drain: Slurm requeues a job whose only node goes down by itself, and
    // auto-resume must still see it as the node's job.
    auto jobs_before = slurm.client->jobs();
    auto s = slurm.client->down_and_drain(
        row.node_name, std::string(kDrainReasonPrefix) + " " + row.recovery_reason);
    drained = s.ok();
    if (!drained) log::warn("{}: {}", row.node_name, s.error().message);
    // Before the stage is stored: a requeue is asked again after a crash, never lost.
    if (drained && node_lost_ && jobs_before) {
      node_lost_(cluster, row.node_name,
                 row.last_verdict.empty() ? row.recovery_reason : row.last_verdict, slurm,
                 *jobs_before);
    }
  }
  (void)apply(store_, row, mark_drained(drained, row.recovery_reason));
}

bool RecoveryManager::reboot(const store::ClusterRow& cluster, const store::InstanceRow& row) {
  if (!apply(store_, row, start_reboot(row.recovery_reason, ids::now_seconds()))) return false;
  auto pid = provider_.reboot(cluster.id, row.instance_id);
  crash_point("recovery.after_reboot");
  if (pid) {
    (void)apply(store_, row, record_pid(*pid));
    return false;
  }
  return apply(store_, row, reboot_failed(pid.error().message)).ok();
}

Status RecoveryManager::request(const store::ClusterRow& cluster, const spec::ClusterLayout& layout,
                                const std::string& instance_id, RecoveryAction action,
                                const std::string& reason) {
  auto row = store_.instance(instance_id);
  if (!row || row->cluster_id != cluster.id || row->terminated_at > 0) {
    return make_error("InstanceIdNotFound",
                      "no instance " + instance_id + " in cluster " + cluster.name);
  }
  const auto* slot = layout.find(row->node_name);
  if (action == RecoveryAction::kReplace && slot && slot->role == spec::NodeRole::kController) {
    return make_error("ControllerNodeNotReplaceable",
                      row->node_name + " (" + instance_id +
                          ") runs slurmctld and holds Slurm's state: it cannot be replaced; "
                          "reboot it instead");
  }
  if (row->status != NodeStatus::kRunning || row->recovery.has_value()) {
    return make_error("InvalidInstanceStatus",
                      instance_id + " is " + status_text(row->status, row->recovery) +
                          "; only a Running instance can be " +
                          (action == RecoveryAction::kReboot ? "rebooted" : "replaced"));
  }
  return apply(store_, *row, operator_request(action, reason, ids::now_seconds()));
}

}  // namespace endure::controller
