// Each named transition of node_transitions.h: the row it makes of a row in its starting
// state, the events it writes, and that the change is an edge of the node table (the check
// apply() makes inside its transaction). No store, no root, no Slurm.
#include "controller/core/node_transitions.h"

#include <gtest/gtest.h>

#include "controller/core/transition.h"

namespace endure::controller {
namespace {

using Events = store::Store::InstanceEvents;
constexpr double kNow = 5000;

store::InstanceRow row_in(NodeStatus status, RecoveryStage stage = RecoveryStage::kNone) {
  store::InstanceRow r;
  r.instance_id = "i-0123456789abcdef0";
  r.cluster_id = "c0ffee000001";
  r.group = "worker";
  r.slot = 1;
  r.node_name = "worker-1";
  r.status = status;
  r.recovery_stage = stage;
  r.message = "before";
  r.pid = 42;
  r.lifecycle_status = LifecycleStatus::kSucceeded;
  r.health = Health::kHealthy;
  r.recovery_since = 100;
  return r;
}

// The row `change` makes of `from`, after checking that it is an edge of the table.
store::InstanceRow made(const NodeChange& change, const store::InstanceRow& from) {
  store::InstanceRow to = change.applied_to(from);
  std::string first = change.events.empty() ? "" : change.events.front().first;
  Status s = check_node_change(from, to, first);
  EXPECT_TRUE(s.ok()) << change.name << ": " << (s ? "" : s.error().message);
  return to;
}

store::InstanceRow rebooting() {
  store::InstanceRow r = row_in(NodeStatus::kPending, RecoveryStage::kRebooting);
  r.recovery = RecoveryAction::kReboot;
  r.recovery_reason = "hang: no heartbeat for 6 s";
  r.lifecycle_status = LifecycleStatus::kRebooting;
  return r;
}

TEST(NodeTransitions, RecordLaunchAdoptAndRecordPidSetThePidAlone) {
  auto from = row_in(NodeStatus::kPending);
  from.pid = 0;
  auto launched = made(record_launch(77), from);
  EXPECT_EQ(launched.pid, 77);
  EXPECT_EQ(launched.status, NodeStatus::kPending);
  EXPECT_EQ(record_launch(77).events, (Events{{"InstanceLaunched", "host pid 77"}}));
  EXPECT_EQ(made(adopt(78), from).pid, 78);
  EXPECT_EQ(adopt(78).events,
            (Events{{"InstanceAdopted", "found running after a controller restart"}}));
  EXPECT_EQ(made(record_pid(79), rebooting()).pid, 79);
  EXPECT_TRUE(record_pid(79).events.empty());
}

TEST(NodeTransitions, NoteAndWaitForHostChangeTheMessageAlone) {
  auto from = row_in(NodeStatus::kPending);
  auto noted = made(note("waiting for slurmd"), from);
  EXPECT_EQ(noted.message, "waiting for slurmd");
  noted.message = from.message;
  EXPECT_EQ(noted.status, from.status);
  EXPECT_TRUE(note("x").events.empty());
  auto waiting = made(wait_for_host("gpu", "waiting for a host of pool gpu"), from);
  EXPECT_EQ(waiting.message, "waiting for a host of pool gpu");
  EXPECT_EQ(wait_for_host("gpu", "w").events,
            (Events{{"NoHostAvailable", "pool gpu has no Available host left"}}));
}

TEST(NodeTransitions, ReturnToServiceEndsTheRecoveryAndStartsTheWatch) {
  auto from = rebooting();
  from.lifecycle_status = LifecycleStatus::kSucceeded;
  from.health = Health::kUnhealthy;
  auto back = made(return_to_service(false, "NodeReturnedToService", "back", kNow), from);
  EXPECT_EQ(back.status, NodeStatus::kRunning);
  EXPECT_EQ(back.message, "");
  EXPECT_EQ(back.health, Health::kHealthy);
  EXPECT_FALSE(back.recovery);
  EXPECT_EQ(back.recovery_stage, RecoveryStage::kNone);
  EXPECT_EQ(back.recovery_since, kNow);
  EXPECT_EQ(return_to_service(false, "NodeReturnedToService", "back", kNow).events,
            (Events{{"NodeReturnedToService", "back"}}));
  auto spare =
      made(return_to_service(true, "WarmSpareReady", "ready", kNow), row_in(NodeStatus::kPending));
  EXPECT_EQ(spare.status, NodeStatus::kWarmSpare);
}

TEST(NodeTransitions, RecordLifecycleMovesTheLifecycleAlone) {
  auto from = row_in(NodeStatus::kPending);
  from.lifecycle_status = LifecycleStatus::kInProgress;
  LifecycleChange failed{LifecycleStatus::kFailed, "LifecycleFailed", "exit 3", true};
  auto to = made(record_lifecycle(failed, 3, "last line"), from);
  EXPECT_EQ(to.lifecycle_status, LifecycleStatus::kFailed);
  EXPECT_EQ(to.lifecycle_exit, 3);
  EXPECT_EQ(to.lifecycle_tail, "last line");
  EXPECT_EQ(to.status, NodeStatus::kPending);
  EXPECT_EQ(record_lifecycle(failed, 3, "").events, (Events{{"LifecycleFailed", "exit 3"}}));
  LifecycleChange quiet{LifecycleStatus::kInProgress, "", "", false};
  EXPECT_TRUE(record_lifecycle(quiet, -1, "").events.empty());
}

TEST(NodeTransitions, BeginShutdownForScaleDownOrDelete) {
  auto from = row_in(NodeStatus::kRunning);
  auto down = made(begin_shutdown(true), from);
  EXPECT_EQ(down.status, NodeStatus::kShuttingDown);
  EXPECT_EQ(down.message, "");
  EXPECT_EQ(begin_shutdown(true).events,
            (Events{{"InstanceShuttingDown", "slot left the spec (scale down)"}}));
  auto deleted = made(begin_shutdown(false), from);
  EXPECT_EQ(deleted.status, NodeStatus::kShuttingDown);
  EXPECT_EQ(deleted.message, "before");
  EXPECT_TRUE(begin_shutdown(false).events.empty());
}

TEST(NodeTransitions, RetireEndsTheInstanceAsFailedOrTerminated) {
  auto failed =
      made(retire(NodeStatus::kFailure, "launch failed: x", kNow), row_in(NodeStatus::kPending));
  EXPECT_EQ(failed.status, NodeStatus::kFailure);
  EXPECT_EQ(failed.message, "launch failed: x");
  EXPECT_EQ(failed.pid, 0);
  EXPECT_EQ(failed.terminated_at, kNow);
  EXPECT_EQ(retire(NodeStatus::kFailure, "m", kNow).events, (Events{{"InstanceFailed", "m"}}));
  auto gone = made(retire(NodeStatus::kTerminated, "cluster deleted", kNow),
                   row_in(NodeStatus::kShuttingDown));
  EXPECT_EQ(gone.status, NodeStatus::kTerminated);
  EXPECT_EQ(retire(NodeStatus::kTerminated, "m", kNow).events,
            (Events{{"InstanceTerminated", "m"}}));
}

TEST(NodeTransitions, FinishReplaceEndsTheOldInstanceWithItsRecoveryDone) {
  auto from = row_in(NodeStatus::kShuttingDown, RecoveryStage::kTerminating);
  from.recovery = RecoveryAction::kReplace;
  auto done = made(finish_replace("xid: 79", kNow), from);
  EXPECT_EQ(done.status, NodeStatus::kTerminated);
  EXPECT_EQ(done.recovery_stage, RecoveryStage::kDone);
  EXPECT_EQ(done.message, "replaced: xid: 79");
  EXPECT_EQ(done.pid, 0);
  EXPECT_EQ(done.terminated_at, kNow);
  EXPECT_EQ(finish_replace("xid: 79", kNow).events,
            (Events{{"InstanceTerminated", "replaced: xid: 79"}}));
}

TEST(NodeTransitions, LoseSpareAndSwapIn) {
  auto spare = row_in(NodeStatus::kWarmSpare);
  spare.node_name = "worker-spare-1";
  auto lost = made(lose_spare("crash: gone", kNow), spare);
  EXPECT_EQ(lost.status, NodeStatus::kTerminated);
  EXPECT_EQ(lost.message, "spare lost: crash: gone");
  EXPECT_EQ(lost.terminated_at, kNow);
  EXPECT_EQ(lose_spare("crash: gone", kNow).events, (Events{{"WarmSpareLost", "crash: gone"}}));

  auto replaced = row_in(NodeStatus::kTerminated, RecoveryStage::kDone);
  replaced.instance_id = "i-00000000000000009";
  replaced.recovery_since = 4000;
  auto in = made(swap_in("worker-3", 3, replaced, "took it"), spare);
  EXPECT_EQ(in.status, NodeStatus::kPending);
  EXPECT_EQ(in.node_name, "worker-3");
  EXPECT_EQ(in.slot, 3);
  EXPECT_EQ(in.replaces, "i-00000000000000009");
  EXPECT_EQ(in.recovery_since, 4000);
  EXPECT_EQ(in.message, "swapped in: waiting for Slurm to see it as worker-3");
  EXPECT_EQ(swap_in("worker-3", 3, replaced, "took it").events,
            (Events{{"WarmSpareSwappedIn", "took it"}}));
}

TEST(NodeTransitions, SuspectAgentRestartedAndMarkHealthyLeaveTheState) {
  auto from = row_in(NodeStatus::kRunning);
  from.health = Health::kUnknown;
  EXPECT_EQ(made(controller::suspect("silent 1.2 s"), from).status, NodeStatus::kRunning);
  EXPECT_EQ(controller::suspect("silent").events, (Events{{"NodeSuspect", "silent"}}));
  EXPECT_EQ(made(agent_restarted("silent"), from).health, Health::kUnknown);
  EXPECT_EQ(agent_restarted("silent").events,
            (Events{{"AgentRestarted", "silent: agent restarted"}}));
  EXPECT_EQ(made(mark_healthy(), from).health, Health::kHealthy);
  EXPECT_TRUE(mark_healthy().events.empty());
}

TEST(NodeTransitions, WaitForJobsAndMarkFailure) {
  auto from = row_in(NodeStatus::kRunning);
  auto waiting = made(wait_for_jobs("waits for job 7"), from);
  EXPECT_EQ(waiting.message, "waits for job 7");
  EXPECT_EQ(wait_for_jobs("w").events, (Events{{"NodeRecoveryWaiting", "w"}}));

  auto failed = made(mark_failure("xid: 79", RecoveryAction::kReplace, true, kNow), from);
  EXPECT_EQ(failed.status, NodeStatus::kFailure);
  EXPECT_EQ(failed.message, "xid: 79");
  EXPECT_EQ(failed.health, Health::kUnhealthy);
  EXPECT_EQ(failed.last_verdict, "Unhealthy: xid: 79 -> Replace");
  EXPECT_EQ(failed.verdict_time, kNow);
  EXPECT_FALSE(failed.recovery);
  EXPECT_EQ(mark_failure("xid: 79", RecoveryAction::kReplace, true, kNow).events,
            (Events{{"NodeUnhealthy", "Unhealthy: xid: 79 -> Replace"},
                    {"NodeDrained", "NodeRecovery is None: drained, no action taken"}}));
  EXPECT_EQ(mark_failure("x", RecoveryAction::kReboot, false, kNow).events.size(), 1u);
}

TEST(NodeTransitions, RequestRecoveryJudgesAndAsks) {
  auto asked = made(request_recovery(RecoveryAction::kReboot, "hang: no heartbeat", kNow),
                    row_in(NodeStatus::kRunning));
  EXPECT_EQ(asked.status, NodeStatus::kRunning);
  EXPECT_EQ(asked.health, Health::kUnhealthy);
  EXPECT_EQ(asked.last_verdict, "Unhealthy: hang: no heartbeat -> Reboot");
  EXPECT_EQ(asked.verdict_time, kNow);
  EXPECT_EQ(asked.recovery, RecoveryAction::kReboot);
  EXPECT_EQ(asked.recovery_reason, "hang: no heartbeat");
  EXPECT_EQ(asked.recovery_stage, RecoveryStage::kRequested);
  EXPECT_EQ(asked.recovery_since, kNow);
  EXPECT_EQ(request_recovery(RecoveryAction::kReboot, "hang", kNow).events,
            (Events{{"NodeUnhealthy", "Unhealthy: hang -> Reboot"}}));
}

TEST(NodeTransitions, OperatorRequestAsksWithoutJudgingHealth) {
  auto asked = made(operator_request(RecoveryAction::kReplace, "BatchReplaceClusterNodes", kNow),
                    row_in(NodeStatus::kRunning));
  EXPECT_EQ(asked.health, Health::kHealthy);
  EXPECT_EQ(asked.recovery, RecoveryAction::kReplace);
  EXPECT_EQ(asked.recovery_reason, "BatchReplaceClusterNodes");
  EXPECT_EQ(asked.recovery_stage, RecoveryStage::kRequested);
  EXPECT_EQ(asked.recovery_since, kNow);
  EXPECT_EQ(asked.last_verdict, "requested: BatchReplaceClusterNodes -> Replace");
  EXPECT_EQ(asked.verdict_time, kNow);
  EXPECT_EQ(operator_request(RecoveryAction::kReplace, "B", kNow).events,
            (Events{{"NodeRecoveryRequested", "B -> Replace"}}));
}

TEST(NodeTransitions, MarkDrainedWithOrWithoutSlurm) {
  auto from = row_in(NodeStatus::kRunning, RecoveryStage::kRequested);
  from.recovery = RecoveryAction::kReplace;
  EXPECT_EQ(made(mark_drained(true, "xid"), from).recovery_stage, RecoveryStage::kDrained);
  EXPECT_EQ(mark_drained(true, "xid").events,
            (Events{{"NodeDrained", "down and drained in Slurm: xid"}}));
  EXPECT_EQ(made(mark_drained(false, "xid"), from).recovery_stage, RecoveryStage::kDrained);
  EXPECT_TRUE(mark_drained(false, "xid").events.empty());
}

TEST(NodeTransitions, StartRebootAndRebootFailed) {
  auto from = row_in(NodeStatus::kRunning, RecoveryStage::kDrained);
  from.recovery = RecoveryAction::kReboot;
  from.reboots = 1;
  auto started = made(start_reboot("hang", kNow), from);
  EXPECT_EQ(started.status, NodeStatus::kPending);
  EXPECT_EQ(started.message, "Rebooting: hang");
  EXPECT_EQ(started.lifecycle_status, LifecycleStatus::kRebooting);
  EXPECT_EQ(started.reboots, 2);
  EXPECT_EQ(started.recovery_stage, RecoveryStage::kRebooting);
  EXPECT_EQ(started.recovery_since, kNow);
  EXPECT_EQ(start_reboot("hang", kNow).events, (Events{{"NodeRebooting", "hang"}}));

  auto failed = made(reboot_failed("no boot in 120 s"), rebooting());
  EXPECT_EQ(failed.status, NodeStatus::kPending);
  EXPECT_EQ(failed.recovery, RecoveryAction::kReplace);
  EXPECT_EQ(failed.recovery_reason, "reboot-failed: no boot in 120 s");
  EXPECT_EQ(failed.recovery_stage, RecoveryStage::kRequested);
  EXPECT_EQ(failed.recovery_since, rebooting().recovery_since);  // the fault's clock goes on
  EXPECT_EQ(reboot_failed("x").events, (Events{{"RebootFailed", "x"}}));
}

TEST(NodeTransitions, MarkReplacing) {
  auto from = row_in(NodeStatus::kRunning, RecoveryStage::kDrained);
  from.recovery = RecoveryAction::kReplace;
  auto to = made(mark_replacing("xid: 79"), from);
  EXPECT_EQ(to.status, NodeStatus::kShuttingDown);
  EXPECT_EQ(to.message, "Replacing: xid: 79");
  EXPECT_EQ(to.recovery_stage, RecoveryStage::kTerminating);
  EXPECT_EQ(mark_replacing("xid: 79").events, (Events{{"NodeReplacing", "xid: 79"}}));
}

TEST(NodeTransitions, DeepCheckStartsAndEnds) {
  json order = {{"Id", "hc-1"}, {"Started", 10}};
  auto in = made(start_deep_check("hc-1", order, "hc-1: network test to worker-2"),
                 row_in(NodeStatus::kRunning));
  EXPECT_EQ(in.status, NodeStatus::kDeepHealthCheckInProgress);
  EXPECT_EQ(in.message, "deep health check hc-1");
  EXPECT_EQ(in.deep_check, order);
  EXPECT_TRUE(in.deep_result.is_null());
  EXPECT_EQ(start_deep_check("hc-1", order, "t").events, (Events{{"DeepHealthCheckStarted", "t"}}));

  auto passed = made(end_deep_check(true, "cpu ok", "", kNow), in);
  EXPECT_EQ(passed.status, NodeStatus::kRunning);
  EXPECT_EQ(passed.message, "");
  EXPECT_TRUE(passed.deep_check.is_null());
  EXPECT_EQ(passed.recovery_since, kNow);
  EXPECT_FALSE(passed.recovery);
  EXPECT_EQ(end_deep_check(true, "cpu ok", "", kNow).events,
            (Events{{"DeepHealthCheckPassed", "cpu ok"}}));

  auto failed = made(end_deep_check(false, "", "disk: full", kNow), in);
  EXPECT_EQ(failed.status, NodeStatus::kRunning);
  EXPECT_EQ(failed.health, Health::kUnhealthy);
  EXPECT_EQ(failed.recovery, RecoveryAction::kReplace);
  EXPECT_EQ(failed.recovery_reason, "deep-health-check: disk: full");
  EXPECT_EQ(failed.recovery_stage, RecoveryStage::kRequested);
  EXPECT_EQ(failed.last_verdict, "Unhealthy: deep-health-check: disk: full -> Replace");
  EXPECT_EQ(end_deep_check(false, "", "disk: full", kNow).events,
            (Events{{"DeepHealthCheckFailed", "disk: full"},
                    {"NodeUnhealthy", "Unhealthy: deep-health-check: disk: full -> Replace"}}));
}

TEST(NodeTransitions, SoftwareUpdateStartsFinishesOrFails) {
  auto updating = made(start_update("su-1", kNow), row_in(NodeStatus::kRunning));
  EXPECT_EQ(updating.status, NodeStatus::kSystemUpdating);
  EXPECT_EQ(updating.message, "software update su-1");
  EXPECT_EQ(updating.lifecycle_status, LifecycleStatus::kNotStarted);
  EXPECT_EQ(updating.pid, 0);
  EXPECT_EQ(updating.recovery_since, kNow);
  EXPECT_EQ(start_update("su-1", kNow).events, (Events{{"NodeUpdating", "software update su-1"}}));

  auto done = made(finish_update("in service", kNow + 9), updating);
  EXPECT_EQ(done.status, NodeStatus::kRunning);
  EXPECT_EQ(done.message, "");
  EXPECT_EQ(done.health, Health::kHealthy);
  EXPECT_EQ(done.recovery_since, kNow + 9);
  EXPECT_EQ(finish_update("t", kNow).events, (Events{{"NodeUpdated", "t"}}));

  auto failed = made(fail_update("OnCreate exit 1", kNow + 9), updating);
  EXPECT_EQ(failed.status, NodeStatus::kRunning);
  EXPECT_EQ(failed.recovery, RecoveryAction::kReplace);
  EXPECT_EQ(failed.recovery_reason, "software-update: OnCreate exit 1");
  EXPECT_EQ(failed.recovery_stage, RecoveryStage::kRequested);
  EXPECT_EQ(failed.health, Health::kUnhealthy);
  EXPECT_EQ(failed.recovery_since, kNow + 9);
  EXPECT_EQ(fail_update("OnCreate exit 1", kNow).events,
            (Events{{"NodeUnhealthy", "Unhealthy: software-update: OnCreate exit 1 -> Replace"}}));
}

// A change from a state the table has no edge for is refused by the same check apply() runs.
TEST(NodeTransitions, AChangeOffTheTableIsRefused) {
  auto from = row_in(NodeStatus::kTerminated);
  auto to = start_reboot("x", kNow).applied_to(from);
  Status s = check_node_change(from, to, "NodeRebooting");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "InvalidTransition");
}

}  // namespace
}  // namespace endure::controller
