// The recovery table, escalation, manual reasons, and heartbeat verdicts under a fake clock.
#include <gtest/gtest.h>

#include "controller/core/health_monitor.h"
#include "controller/core/recovery_policy.h"

namespace endure::controller {
namespace {

TEST(RecoveryPolicy, TableByFaultKind) {
  struct Case {
    const char* fault;
    RecoveryAction action;
  };
  for (const auto& c : std::vector<Case>{{"crash", RecoveryAction::kReplace},
                                         {"hang", RecoveryAction::kReboot},
                                         {"slurmd-gone", RecoveryAction::kReboot},
                                         {"fsx-hang", RecoveryAction::kReboot},
                                         {"fsx-error", RecoveryAction::kReboot},
                                         {"xid", RecoveryAction::kReplace},
                                         {"ecc", RecoveryAction::kReplace},
                                         {"mce", RecoveryAction::kReplace},
                                         {"fs-error", RecoveryAction::kReplace},
                                         {"disk-full", RecoveryAction::kReplace},
                                         {"local-disk", RecoveryAction::kReplace},
                                         {"cpu", RecoveryAction::kReplace},
                                         {"memory", RecoveryAction::kReplace},
                                         {"gpu-count", RecoveryAction::kReplace},
                                         {"nvml", RecoveryAction::kReplace},
                                         {"reboot-failed", RecoveryAction::kReplace},
                                         {"agent", RecoveryAction::kReplace},
                                         {"deep-health-check", RecoveryAction::kReplace},
                                         {"software-update", RecoveryAction::kReplace}}) {
    SCOPED_TRACE(c.fault);
    auto kind = api::parse_fault_kind(c.fault);
    ASSERT_TRUE(kind);
    EXPECT_EQ(action_for_fault(*kind), c.action);
  }
  // A kind this endured does not know never reaches the table: the wire refuses it.
  EXPECT_FALSE(api::parse_fault_kind("something-new"));
  EXPECT_EQ(api::all_fault_kinds().size(), 19u);
}

TEST(RecoveryPolicy, ANodeThatKeepsFailingIsReplacedNotRebootedForEver) {
  EXPECT_EQ(escalate(RecoveryAction::kReboot, 0), RecoveryAction::kReboot);
  EXPECT_EQ(escalate(RecoveryAction::kReboot, kMaxReboots - 1), RecoveryAction::kReboot);
  EXPECT_EQ(escalate(RecoveryAction::kReboot, kMaxReboots), RecoveryAction::kReplace);
  EXPECT_EQ(escalate(RecoveryAction::kReplace, 0), RecoveryAction::kReplace);
}

TEST(RecoveryPolicy, ManualReasonsMatchExactly) {
  EXPECT_EQ(manual_action("Action:Replace"), RecoveryAction::kReplace);
  EXPECT_EQ(manual_action("Action:Reboot"), RecoveryAction::kReboot);
  EXPECT_EQ(manual_action("  Action:Reboot "), RecoveryAction::kReboot);
  for (const char* wrong : {"", "action:replace", "Action: Replace", "Action:Replace now",
                            "Action:Restart", "ACTION:REBOOT", "Replace", "endure: hang"}) {
    SCOPED_TRACE(wrong);
    EXPECT_FALSE(manual_action(wrong).has_value());
  }
  EXPECT_EQ(parse_action(action_name(RecoveryAction::kReboot)), RecoveryAction::kReboot);
  EXPECT_EQ(parse_action(action_name(RecoveryAction::kReplace)), RecoveryAction::kReplace);
  EXPECT_FALSE(parse_action("reboot").has_value());
}

class FakeClock {
 public:
  double now = 1000;
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

TEST(HealthMonitor, SilenceIsCountedFromTheLastHeartbeat) {
  FakeClock clock;
  HealthMonitor monitor(clock.fn());
  monitor.heartbeat("i-1", {}, "c-1");
  clock.now += 4.9;
  EXPECT_NEAR(monitor.silent_for("i-1", 990), 4.9, 1e-9);
  EXPECT_FALSE(monitor.assess("i-1", true).has_value()) << "silence alone is no verdict";
  monitor.heartbeat("i-1", {});
  EXPECT_NEAR(monitor.silent_for("i-1", 990), 0.0, 1e-9);
  EXPECT_NEAR(monitor.heartbeat_age("i-1"), 0.0, 1e-9);
  EXPECT_LT(monitor.heartbeat_age("i-unknown"), 0);
  EXPECT_EQ(monitor.heard(), (std::vector<std::pair<std::string, std::string>>{{"c-1", "i-1"}}));
}

TEST(HealthMonitor, GoneProcessesAreACrashWhateverTheHeartbeats) {
  FakeClock clock;
  HealthMonitor monitor(clock.fn());
  monitor.heartbeat("i-1", {});
  auto verdict = monitor.assess("i-1", false);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->fault, *api::parse_fault_kind("crash"));
}

TEST(HealthMonitor, EveryNodeGetsAGracePeriodAfterAControllerStartOrAReboot) {
  FakeClock clock;
  HealthMonitor monitor(clock.fn());  // started at 1000, no heartbeat heard yet
  clock.now = 1004;
  EXPECT_NEAR(monitor.silent_for("i-1", 0), 4.0, 1e-9) << "counted from the monitor's start";
  // A node back in service at 1003 is watched from then on.
  EXPECT_NEAR(monitor.silent_for("i-1", 1003), 1.0, 1e-9);
  monitor.heartbeat("i-1", {});
  monitor.forget("i-1");
  EXPECT_LT(monitor.heartbeat_age("i-1"), 0);
}

TEST(HealthMonitor, AgentFindingsBecomeTheVerdict) {
  FakeClock clock;
  HealthMonitor monitor(clock.fn());
  monitor.heartbeat("i-1", {api::Finding{api::FaultKind::kDiskFull, "disk", "/local: 1 % free"}});
  auto verdict = monitor.assess("i-1", true);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->fault, *api::parse_fault_kind("disk-full"));
  EXPECT_NE(verdict->detail.find("disk: /local"), std::string::npos);
  monitor.heartbeat("i-1", {});
  EXPECT_FALSE(monitor.assess("i-1", true).has_value()) << "a condition that passed is gone";
}

TEST(HealthMonitor, LoggedFindingsStandAndCountOncePerRecord) {
  FakeClock clock;
  HealthMonitor monitor(clock.fn());
  api::LoggedFinding xid{"kmsg:1042", api::FaultKind::kXid, "kernel-log",
                         "Xid 79: GPU has fallen off the bus"};
  EXPECT_EQ(monitor.logged("i-1", {xid}), 1);
  EXPECT_EQ(monitor.logged("i-1", {xid}), 0) << "sent again: the same record";
  auto verdict = monitor.assess("i-1", true);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->fault, *api::parse_fault_kind("xid"));
  EXPECT_NE(verdict->detail.find("Xid 79"), std::string::npos);
  monitor.heartbeat("i-1", {});
  EXPECT_TRUE(monitor.assess("i-1", true).has_value()) << "a logged fault does not heal";
  monitor.forget("i-1");  // rebooted: kmsg counts from 0 again
  EXPECT_FALSE(monitor.assess("i-1", true).has_value());
  EXPECT_EQ(monitor.logged("i-1", {xid}), 1);
}

}  // namespace
}  // namespace endure::controller
