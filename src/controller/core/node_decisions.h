// What endured decides about a node, as pure functions of what a pass observed and the
// clock: (state, observation, now) -> (next step, its words). The managers observe (store,
// provider, Slurm), call these, then act; every branch here is a unit test with no root, no
// Slurm and no provider (tests/unit/controller/core/node_decisions_test.cpp). The steps'
// names are the transitions of node_state.h.
#pragma once

#include <optional>
#include <string>

#include "common/json.h"
#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "controller/core/node_state.h"
#include "controller/core/recovery_policy.h"
#include "provider/node_probe.h"
#include "slurm/slurm_client.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

// --- An agent's lifecycle report (AgentReportLifecycle) ---

struct LifecycleChange {
  LifecycleStatus to;
  std::string event;        // "" for none (InProgress, or a repeat)
  std::string description;  // the event's
  bool changed = false;     // the status moved: the reconciler has something to do
};

// nullopt when the report changes nothing: an outcome stands until a reboot asks again,
// and a rebooting node's "in progress" adds nothing.
std::optional<LifecycleChange> decide_lifecycle_report(LifecycleStatus current,
                                                       LifecycleStatus reported, int exit_code);

// --- A Pending node on its way into service (the reconciler's advance_pending) ---

struct PendingObservation {
  spec::NodeRole role = spec::NodeRole::kWorker;
  bool controller_up = false;       // slurmctld answers (read for the controller node only)
  bool controller_running = false;  // the cluster's controller node is Running
  std::optional<slurm::NodeState> slurm_node;  // Slurm's record of this node, if any
  bool spare = false;  // a warm spare's slot: ready means WarmSpare, not in service
  double now = 0;
};

struct PendingLimits {
  double reboot_timeout = 0;     // a reboot must bring the node back within this
  double lifecycle_timeout = 0;  // OnCreate's own limit
  double slurm_register_timeout = 0;
};

enum class PendingStep {
  kNothing,       // not ours to move (a recovery is under way) or nothing new
  kWait,          // text: what it waits for (the row's message)
  kRetire,        // text: why it failed (retired as Failure)
  kRebootFailed,  // text: why; the recovery turns into a Replace
  kRun,           // into service; event and text say how
};

struct PendingDecision {
  PendingStep step = PendingStep::kNothing;
  std::string text;
  std::string event;             // kRun: InstanceRunning or NodeReturnedToService
  bool resume_in_slurm = false;  // kRun: resume the node endured (or an Action:) drained
};

// endured's limits, from its settings.
PendingLimits pending_limits(const Config& config);

PendingDecision decide_pending(const store::InstanceRow& row, const PendingObservation& seen,
                               const PendingLimits& limits);

// --- A Running node's health (the recovery manager's judge) ---

struct HealthObservation {
  std::optional<slurm::NodeState> slurm_node;  // Slurm's record of this node, if any
  std::optional<Verdict> verdict;              // the health monitor's, nullopt: healthy
  bool is_controller = false;                  // runs slurmctld: rebooted, never replaced
  bool recovery_enabled = true;                // the cluster's NodeRecovery is Automatic
  bool update_under_way = false;  // UpdateClusterSoftware drains nodes in service on purpose
};

enum class HealthStep {
  kNothing,      // healthy and marked so
  kMarkHealthy,  // healthy again (the row said otherwise)
  kWaitForJobs,  // an operator's Action: with jobs on the node (state=fail): text
  kMarkFailure,  // NodeRecovery None: marked Failure and drained, nothing else
  kRecover,      // a recovery is requested: action, reason
  kResume,       // healthy, but still drained by endured: resumed in Slurm
};

struct HealthDecision {
  HealthStep step = HealthStep::kNothing;
  RecoveryAction action = RecoveryAction::kReplace;
  std::string reason;   // "hang: no heartbeat for 6.0 s", "Action:Replace set in Slurm"
  std::string verdict;  // "Unhealthy: <reason> -> Replace"
  std::string text;     // kWaitForJobs: the row's message
};

HealthDecision decide_health(const store::InstanceRow& row, const HealthObservation& seen);

// --- A Running node whose heartbeats stopped (the silence confirmer) ---

struct SilenceObservation {
  double silent_for = 0;      // seconds without a heartbeat
  provider::NodeProbe probe;  // the provider's look from outside (not taken while quiet)
  // Its Slurm daemon (slurmd; slurmctld on the controller node) answered a bounded request:
  // nullopt when it was not asked (the probe decided) or the node runs none.
  std::optional<bool> daemon_answers;
  double since_agent_restart = -1;  // seconds since endured restarted its agent; < 0: never
};

struct SilenceLimits {
  double suspect_after = 1;      // a silence this long makes the node a suspect
  double hang_after = 5;         // unconfirmed silence this long (nothing answers) is a hang
  double agent_restart_gap = 5;  // an agent restarted is given this long to speak again
};

enum class SilenceStep {
  kQuiet,         // not silent long enough to suspect anything: no probe taken
  kVerdict,       // confirmed: fault and text make the verdict
  kRestartAgent,  // the agent alone is silent on a live node: restart it, keep the node
  kWait,          // a suspect not confirmed either way yet (text: why)
};

struct SilenceDecision {
  SilenceStep step = SilenceStep::kQuiet;
  std::optional<api::FaultKind> fault;  // kVerdict: crash or hang
  std::string text;
};

// Whether the silence needs the provider's probe and the daemon's answer (false: quiet).
bool is_suspect(double silent_for, const SilenceLimits& limits);

// A node is judged only on a second opinion: gone (crash) or every process stopped (hang)
// at once; a live node whose Slurm daemon answers keeps its place and gets its agent
// restarted; a starved agent (runnable) is never judged; a live node where nothing answers
// is a hang only after hang_after.
SilenceDecision decide_silence(const SilenceObservation& seen, const SilenceLimits& limits);

SilenceLimits silence_limits(const Config& config);

// --- A recovery under way (the recovery manager's act) ---

enum class RecoveryStep { kNone, kDrain, kReboot, kMarkReplacing, kDestroy };

// The next effect of a recovery at `stage`: Requested -> drain; Drained -> reboot (Reboot)
// or mark replacing (Replace); Terminating -> destroy (Replace). kNone otherwise.
RecoveryStep next_recovery_step(std::optional<RecoveryAction> recovery, RecoveryStage stage);

// --- Closing a deep health check (the deep check manager) ---

struct DeepCheckOutcome {
  bool passed = false;
  std::string failed;   // "disk: No space left on device; ..." (or the timeout)
  std::string summary;  // the passed checks and their metrics
};

// results: the node's reported [{Check, Passed, Detail, Metrics}], or null when it reported
// nothing within timeout_seconds.
DeepCheckOutcome decide_deep_check(const json& results, int timeout_seconds);

// --- A node of an UpdateClusterSoftware batch (the software update manager) ---

enum class UpdateStep {
  kDone,         // the slot's instance is not the one being updated: a new one runs new software
  kDrain,        // a worker: drain it in Slurm so that no new job lands on it
  kWaitForJobs,  // drained, its jobs still run: a job is never killed by an update (text)
  kStart,        // free: mark it SystemUpdating and reimage it
  kReimage,      // marked, not reimaged yet (a controller restarted in between)
  kWait,         // on its way (OnCreate runs, slurmd registers, a recovery runs)
  kFinish,       // back: Running again on new software
  kFail,         // OnCreate failed or never came back: text; it is replaced
};

struct UpdateDecision {
  UpdateStep step = UpdateStep::kWait;
  std::string text;
  bool resume_in_slurm = false;  // kFinish: undo the update's drain
};

// row: the slot's live instance (null when none); instance_id: the one the update started
// on. The SystemUpdating clock is the row's recovery_since, set when the update started.
UpdateDecision decide_update(const store::InstanceRow* row, const std::string& instance_id,
                             const PendingObservation& seen, const PendingLimits& limits);

}  // namespace endure::controller
