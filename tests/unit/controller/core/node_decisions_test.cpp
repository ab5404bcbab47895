// endured's decisions about a node, every branch, error paths included: pure functions of a
// row, what a pass observed and the clock (controller/node_decisions.h). No root, no Slurm,
// no provider: the effects are the integration tests' to cover.
#include <gtest/gtest.h>

#include "controller/core/node_decisions.h"

namespace endure::controller {
namespace {

using L = LifecycleStatus;

slurm::NodeState slurm_node(const std::string& state, std::vector<std::string> flags = {},
                            const std::string& reason = "") {
  return {"worker-0", state, std::move(flags), reason, "", ""};
}

// --- lifecycle reports ---

TEST(LifecycleReport, StartingChangesTheStatusWithoutAnEvent) {
  auto c = decide_lifecycle_report(L::kNotStarted, L::kInProgress, -1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->to, L::kInProgress);
  EXPECT_TRUE(c->changed);
  EXPECT_EQ(c->event, "");
}

TEST(LifecycleReport, OutcomesOfOnCreateAreEvents) {
  auto ok = decide_lifecycle_report(L::kInProgress, L::kSucceeded, 0);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->event, "LifecycleSucceeded");
  EXPECT_EQ(ok->description, "OnCreate succeeded with exit code 0");
  auto failed = decide_lifecycle_report(L::kInProgress, L::kFailed, 3);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->event, "LifecycleFailed");
  EXPECT_EQ(failed->description, "OnCreate failed with exit code 3");
}

TEST(LifecycleReport, AfterARebootTheBootScriptsReport) {
  auto ok = decide_lifecycle_report(L::kRebooting, L::kSucceeded, 0);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->event, "BootScriptsSucceeded");
  auto failed = decide_lifecycle_report(L::kRebooting, L::kFailed, 1);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->event, "BootScriptsFailed");
  EXPECT_EQ(failed->description, "boot scripts failed with exit code 1");
}

TEST(LifecycleReport, AnOutcomeStandsAndARebootsProgressAddsNothing) {
  EXPECT_FALSE(decide_lifecycle_report(L::kSucceeded, L::kFailed, 1));
  EXPECT_FALSE(decide_lifecycle_report(L::kFailed, L::kSucceeded, 0));
  EXPECT_FALSE(decide_lifecycle_report(L::kRebooting, L::kInProgress, -1));
}

TEST(LifecycleReport, ARepeatedProgressReportChangesNothingButItsLines) {
  auto c = decide_lifecycle_report(L::kInProgress, L::kInProgress, -1);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->changed);
  EXPECT_EQ(c->event, "");
}

// --- a Pending node ---

constexpr PendingLimits kLimits{120, 900, 120};

store::InstanceRow pending_row(const std::string& lifecycle = "Succeeded") {
  store::InstanceRow r;
  r.instance_id = "i-0";
  r.group = "worker";
  r.node_name = "worker-0";
  r.status = api::NodeStatus::kPending;
  r.lifecycle_status = *api::parse_lifecycle_status(lifecycle);
  r.launch_time = 1000;
  r.pid = 42;
  return r;
}

PendingObservation seen_at(double now, spec::NodeRole role = spec::NodeRole::kWorker) {
  PendingObservation o;
  o.role = role;
  o.controller_running = true;
  o.now = now;
  return o;
}

TEST(PendingNode, WhileOnCreateRunsNothingHappens) {
  auto d = decide_pending(pending_row("InProgress"), seen_at(1010), kLimits);
  EXPECT_EQ(d.step, PendingStep::kNothing);
}

TEST(PendingNode, NoLifecycleOutcomeInTimeRetiresIt) {
  auto d = decide_pending(pending_row("InProgress"), seen_at(1000 + 961), kLimits);
  EXPECT_EQ(d.step, PendingStep::kRetire);
  EXPECT_EQ(d.text, "no lifecycle outcome within 960 s");
}

TEST(PendingNode, AFailedOnCreateRetiresIt) {
  auto r = pending_row("Failed");
  r.lifecycle_exit = 3;
  auto d = decide_pending(r, seen_at(1010), kLimits);
  EXPECT_EQ(d.step, PendingStep::kRetire);
  EXPECT_EQ(d.text, "OnCreate worker script failed with exit code 3");
}

TEST(PendingNode, AWorkerSlurmSeesGoesIntoService) {
  auto seen = seen_at(1012.5);
  seen.slurm_node = slurm_node("idle");
  auto d = decide_pending(pending_row(), seen, kLimits);
  EXPECT_EQ(d.step, PendingStep::kRun);
  EXPECT_EQ(d.event, "InstanceRunning");
  EXPECT_EQ(d.text, "in service 12.5 s after launch");
  EXPECT_FALSE(d.resume_in_slurm);
}

TEST(PendingNode, AWarmSpareSlurmSeesIsReadyNotInService) {
  auto seen = seen_at(1003.2);
  seen.spare = true;
  seen.slurm_node = slurm_node("idle");
  auto d = decide_pending(pending_row(), seen, kLimits);
  EXPECT_EQ(d.step, PendingStep::kRun);
  EXPECT_EQ(d.event, "WarmSpareReady");
  EXPECT_EQ(d.text, "ready to swap in 3.2 s after launch");
}

TEST(PendingNode, ASwappedInSpareWaitsFromItsFaultNotItsLaunch) {
  auto r = pending_row();
  r.replaces = "i-old";
  r.recovery_since = 1000 + 1015;  // the fault it answers, long after the spare's launch
  auto seen = seen_at(1000 + 1030);
  seen.slurm_node = slurm_node("down", {"NOT_RESPONDING"});
  auto d = decide_pending(r, seen, kLimits);
  EXPECT_EQ(d.step, PendingStep::kWait);
  EXPECT_EQ(d.text, "waiting for its slurmd to register with slurmctld");
}

TEST(PendingNode, AWorkerWaitsForItsSlurmdAndSaysSoOnce) {
  auto seen = seen_at(1010);
  seen.slurm_node = slurm_node("down", {"NOT_RESPONDING"});
  auto d = decide_pending(pending_row(), seen, kLimits);
  EXPECT_EQ(d.step, PendingStep::kWait);
  EXPECT_EQ(d.text, "waiting for its slurmd to register with slurmctld");
  auto r = pending_row();
  r.message = d.text;
  EXPECT_EQ(decide_pending(r, seen, kLimits).step, PendingStep::kNothing);
}

TEST(PendingNode, AWorkerWaitsWhileTheControllerNodeIsNotRunning) {
  auto seen = seen_at(1010);
  seen.controller_running = false;
  seen.slurm_node = slurm_node("idle");
  EXPECT_EQ(decide_pending(pending_row(), seen, kLimits).step, PendingStep::kWait);
}

TEST(PendingNode, AWorkerSlurmNeverSawIsRetiredAfterTheRegisterTimeout) {
  auto d = decide_pending(pending_row(), seen_at(1000 + 900 + 121), kLimits);
  EXPECT_EQ(d.step, PendingStep::kRetire);
  EXPECT_EQ(d.text,
            "lifecycle succeeded but timed out waiting for its slurmd to register with slurmctld");
}

TEST(PendingNode, TheControllerNodeWaitsForSlurmctld) {
  auto seen = seen_at(1010, spec::NodeRole::kController);
  auto d = decide_pending(pending_row(), seen, kLimits);
  EXPECT_EQ(d.step, PendingStep::kWait);
  EXPECT_EQ(d.text, "waiting for slurmctld to answer");
  seen.controller_up = true;
  EXPECT_EQ(decide_pending(pending_row(), seen, kLimits).step, PendingStep::kRun);
}

TEST(PendingNode, ALoginNodeNeedsOnlyItsLifecycle) {
  auto d = decide_pending(pending_row(), seen_at(1010, spec::NodeRole::kLogin), kLimits);
  EXPECT_EQ(d.step, PendingStep::kRun);
}

TEST(PendingNode, ANodeEndureDrainedIsResumedAndAnOperatorsDrainIsLeft) {
  auto seen = seen_at(1010);
  seen.slurm_node = slurm_node("idle", {"DRAIN"}, "endure: hang: no heartbeat");
  EXPECT_TRUE(decide_pending(pending_row(), seen, kLimits).resume_in_slurm);
  seen.slurm_node = slurm_node("idle", {"DRAIN"}, "Action:Replace");
  EXPECT_TRUE(decide_pending(pending_row(), seen, kLimits).resume_in_slurm);
  seen.slurm_node = slurm_node("idle", {"DRAIN"}, "bad fan, ticket 12");
  auto d = decide_pending(pending_row(), seen, kLimits);
  EXPECT_EQ(d.step, PendingStep::kRun);
  EXPECT_FALSE(d.resume_in_slurm);
}

TEST(PendingNode, AReplacementReturnsToServiceCountedFromTheFault) {
  auto r = pending_row();
  r.replaces = "i-old";
  r.recovery_since = 990;
  auto seen = seen_at(1010);
  seen.slurm_node = slurm_node("idle");
  auto d = decide_pending(r, seen, kLimits);
  EXPECT_EQ(d.event, "NodeReturnedToService");
  EXPECT_EQ(d.text, "replaced, back in service 20.0 s after the fault was found");
}

store::InstanceRow rebooting_row(const std::string& lifecycle) {
  auto r = pending_row(lifecycle);
  r.recovery = api::RecoveryAction::kReboot;
  r.recovery_stage = api::RecoveryStage::kRebooting;
  r.recovery_since = 5000;
  r.lifecycle_tail = "mount failed";
  return r;
}

TEST(PendingNode, ARebootedNodeReturnsToService) {
  auto seen = seen_at(5030);
  seen.slurm_node = slurm_node("idle");
  auto d = decide_pending(rebooting_row("Succeeded"), seen, kLimits);
  EXPECT_EQ(d.step, PendingStep::kRun);
  EXPECT_EQ(d.event, "NodeReturnedToService");
  EXPECT_EQ(d.text, "rebooted, back in service 30.0 s after the fault was found");
}

TEST(PendingNode, ARebootWhoseBootScriptsFailedTurnsIntoAReplace) {
  auto d = decide_pending(rebooting_row("Failed"), seen_at(5010), kLimits);
  EXPECT_EQ(d.step, PendingStep::kRebootFailed);
  EXPECT_EQ(d.text, "its boot scripts failed: mount failed");
}

TEST(PendingNode, ARebootNotBackInTimeTurnsIntoAReplace) {
  auto d = decide_pending(rebooting_row("Rebooting"), seen_at(5121), kLimits);
  EXPECT_EQ(d.step, PendingStep::kRebootFailed);
  EXPECT_EQ(d.text, "not back in service 120 s after the reboot");
}

TEST(PendingNode, ARebootingNodeWaitsWithoutMessagesOrLaunchTimeouts) {
  // Long after its launch: the reboot's own clock counts, not the launch's.
  auto seen = seen_at(5010);
  EXPECT_EQ(decide_pending(rebooting_row("Rebooting"), seen, kLimits).step,
            PendingStep::kNothing);
  EXPECT_EQ(decide_pending(rebooting_row("Succeeded"), seen, kLimits).step,
            PendingStep::kNothing);
}

TEST(PendingNode, AFailedRebootTurnedReplaceIsLeftToRecovery) {
  // reboot() could not start the node: Pending, its recovery now a Replace at Requested.
  // The launch-time lifecycle limit must not retire it as a creation failure.
  auto r = rebooting_row("Rebooting");
  r.recovery = api::RecoveryAction::kReplace;
  r.recovery_stage = api::RecoveryStage::kRequested;
  EXPECT_EQ(decide_pending(r, seen_at(1000 + 5000), kLimits).step, PendingStep::kNothing);
  r.recovery_stage = api::RecoveryStage::kDrained;
  EXPECT_EQ(decide_pending(r, seen_at(1000 + 5000), kLimits).step, PendingStep::kNothing);
}

// --- a Running node's health ---

store::InstanceRow running_row() {
  store::InstanceRow r = pending_row();
  r.status = api::NodeStatus::kRunning;
  r.health = api::Health::kHealthy;
  return r;
}

TEST(NodeHealth, AHealthyNodeIsLeftOrMarkedHealthy) {
  EXPECT_EQ(decide_health(running_row(), {}).step, HealthStep::kNothing);
  auto r = running_row();
  r.health = api::Health::kUnknown;
  EXPECT_EQ(decide_health(r, {}).step, HealthStep::kMarkHealthy);
}

TEST(NodeHealth, AVerdictRequestsItsTablesAction) {
  HealthObservation seen;
  seen.verdict = Verdict{*api::parse_fault_kind("hang"), "no heartbeat for 6.0 s"};
  auto d = decide_health(running_row(), seen);
  EXPECT_EQ(d.step, HealthStep::kRecover);
  EXPECT_EQ(d.action, RecoveryAction::kReboot);
  EXPECT_EQ(d.reason, "hang: no heartbeat for 6.0 s");
  EXPECT_EQ(d.verdict, "Unhealthy: hang: no heartbeat for 6.0 s -> Reboot");
  seen.verdict = Verdict{*api::parse_fault_kind("xid"), "Xid 79"};
  EXPECT_EQ(decide_health(running_row(), seen).action, RecoveryAction::kReplace);
}

TEST(NodeHealth, ANodeThatKeepsFailingIsReplacedInsteadOfRebooted) {
  HealthObservation seen;
  seen.verdict = Verdict{*api::parse_fault_kind("hang"), "no heartbeat"};
  auto r = running_row();
  r.reboots = kMaxReboots;
  EXPECT_EQ(decide_health(r, seen).action, RecoveryAction::kReplace);
}

TEST(NodeHealth, TheControllerNodeIsRebootedNeverReplaced) {
  HealthObservation seen;
  seen.verdict = Verdict{*api::parse_fault_kind("crash"), "every process of the instance is gone"};
  seen.is_controller = true;
  auto d = decide_health(running_row(), seen);
  EXPECT_EQ(d.action, RecoveryAction::kReboot);
  EXPECT_EQ(d.verdict, "Unhealthy: crash: every process of the instance is gone -> Reboot");
}

TEST(NodeHealth, WithNodeRecoveryNoneANodeIsOnlyMarked) {
  HealthObservation seen;
  seen.verdict = Verdict{*api::parse_fault_kind("xid"), "Xid 79"};
  seen.recovery_enabled = false;
  auto d = decide_health(running_row(), seen);
  EXPECT_EQ(d.step, HealthStep::kMarkFailure);
  EXPECT_EQ(d.verdict, "Unhealthy: xid: Xid 79 -> Replace");
}

TEST(NodeHealth, AnOperatorsActionWaitsForJobsThenActs) {
  HealthObservation seen;
  seen.slurm_node = slurm_node("allocated", {"FAIL"}, "Action:Replace");
  auto d = decide_health(running_row(), seen);
  EXPECT_EQ(d.step, HealthStep::kWaitForJobs);
  EXPECT_EQ(d.text, "Action:Replace requested: waiting for jobs to finish");
  auto r = running_row();
  r.message = d.text;
  EXPECT_EQ(decide_health(r, seen).step, HealthStep::kNothing);  // said once
  seen.slurm_node = slurm_node("idle", {"FAIL"}, "Action:Replace");
  d = decide_health(running_row(), seen);
  EXPECT_EQ(d.step, HealthStep::kRecover);
  EXPECT_EQ(d.action, RecoveryAction::kReplace);
  EXPECT_EQ(d.reason, "Action:Replace set in Slurm");
}

TEST(NodeHealth, ANodeSetDownWithAnActionActsAtOnce) {
  HealthObservation seen;
  seen.slurm_node = slurm_node("down", {}, "Action:Reboot");
  auto d = decide_health(running_row(), seen);
  EXPECT_EQ(d.step, HealthStep::kRecover);
  EXPECT_EQ(d.action, RecoveryAction::kReboot);
}

TEST(NodeHealth, AMisspeltActionDoesNothing) {
  HealthObservation seen;
  seen.slurm_node = slurm_node("idle", {"DRAIN"}, "action:replace");
  EXPECT_EQ(decide_health(running_row(), seen).step, HealthStep::kNothing);
}

TEST(NodeHealth, ADrainOfEnduredsOwnWithNoRecoveryIsResumed) {
  HealthObservation seen;
  seen.slurm_node = slurm_node("idle", {"DRAIN"}, "endure: crash: every process is gone");
  EXPECT_EQ(decide_health(running_row(), seen).step, HealthStep::kResume);
  seen.slurm_node = slurm_node("down", {"DRAIN"}, "endure: crash: every process is gone");
  EXPECT_EQ(decide_health(running_row(), seen).step, HealthStep::kResume);
  // Not before its slurmd registers with a restarted slurmctld: Slurm would refuse it.
  seen.slurm_node = slurm_node("unknown", {"DRAIN"}, "endure: crash: every process is gone");
  EXPECT_EQ(decide_health(running_row(), seen).step, HealthStep::kNothing);
  seen.slurm_node =
      slurm_node("idle", {"DRAIN", "NOT_RESPONDING"}, "endure: crash: every process is gone");
  EXPECT_EQ(decide_health(running_row(), seen).step, HealthStep::kNothing);
  // An operator's own drain stays, and so does an update's while the update runs.
  seen.slurm_node = slurm_node("idle", {"DRAIN"}, "maintenance");
  EXPECT_EQ(decide_health(running_row(), seen).step, HealthStep::kNothing);
  seen.slurm_node = slurm_node("idle", {"DRAIN"}, "endure: software update u-1");
  seen.update_under_way = true;
  EXPECT_EQ(decide_health(running_row(), seen).step, HealthStep::kNothing);
  // A verdict comes first.
  seen.update_under_way = false;
  seen.verdict = Verdict{*api::parse_fault_kind("xid"), "Xid 79"};
  EXPECT_EQ(decide_health(running_row(), seen).step, HealthStep::kRecover);
}

// --- a recovery under way ---

TEST(RecoverySteps, EachStageHasOneNextEffect) {
  using S = RecoveryStage;
  struct Case {
    const char* recovery;
    S stage;
    RecoveryStep step;
  };
  for (const auto& c : std::vector<Case>{
           {"Reboot", S::kRequested, RecoveryStep::kDrain},
           {"Replace", S::kRequested, RecoveryStep::kDrain},
           {"Reboot", S::kDrained, RecoveryStep::kReboot},
           {"Replace", S::kDrained, RecoveryStep::kMarkReplacing},
           {"Replace", S::kTerminating, RecoveryStep::kDestroy},
           {"Reboot", S::kRebooting, RecoveryStep::kNone},  // the reconciler watches it
           {"Reboot", S::kTerminating, RecoveryStep::kNone},
           {"Replace", S::kDone, RecoveryStep::kNone},
           {"", S::kNone, RecoveryStep::kNone},
       }) {
    EXPECT_EQ(next_recovery_step(api::parse_recovery_action(c.recovery), c.stage), c.step)
        << c.recovery << " at " << name(c.stage);
  }
}

// --- closing a deep health check ---

TEST(DeepCheckClose, NoResultInTimeFails) {
  auto o = decide_deep_check(nullptr, 180);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.failed, "no result within 180 s");
}

TEST(DeepCheckClose, EveryFailedCheckIsNamedAndAllPassedIsSummarised) {
  json results = json::array({{{"Check", "cpu"}, {"Passed", true}, {"Metrics", {{"GFlops", 9}}}},
                              {{"Check", "disk"}, {"Passed", false}, {"Detail", "No space"}},
                              {{"Check", "network"}, {"Passed", false}, {"Detail", "1 MB/s"}}});
  auto o = decide_deep_check(results, 180);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.failed, "disk: No space; network: 1 MB/s");
  results.erase(1);
  results.erase(1);
  o = decide_deep_check(results, 180);
  EXPECT_TRUE(o.passed);
  EXPECT_EQ(o.summary, "cpu {\"GFlops\":9}");
}

}  // namespace
}  // namespace endure::controller
