// The recovery table, escalation, manual reasons, and heartbeat verdicts under a fake clock.
#include <gtest/gtest.h>

#include "controller/health_monitor.h"
#include "controller/recovery_policy.h"

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
                                         {"something-new", RecoveryAction::kReplace}}) {
    SCOPED_TRACE(c.fault);
    EXPECT_EQ(action_for_fault(c.fault), c.action);
  }
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

TEST(HealthMonitor, SilentNodeWithProcessesIsHungOnlyAfterTheTimeout) {
  FakeClock clock;
  HealthMonitor monitor(5.0, clock.fn());
  monitor.heartbeat("i-1", json::array());
  clock.now += 4.9;
  EXPECT_FALSE(monitor.assess("i-1", true, 990).has_value());
  clock.now += 0.2;
  auto verdict = monitor.assess("i-1", true, 990);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->fault, "hang");
  monitor.heartbeat("i-1", json::array());
  EXPECT_FALSE(monitor.assess("i-1", true, 990).has_value());
  EXPECT_NEAR(monitor.heartbeat_age("i-1"), 0.0, 1e-9);
  EXPECT_LT(monitor.heartbeat_age("i-unknown"), 0);
}

TEST(HealthMonitor, GoneProcessesAreACrashWhateverTheHeartbeats) {
  FakeClock clock;
  HealthMonitor monitor(5.0, clock.fn());
  monitor.heartbeat("i-1", json::array());
  auto verdict = monitor.assess("i-1", false, 990);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->fault, "crash");
}

TEST(HealthMonitor, EveryNodeGetsAGracePeriodAfterAControllerStartOrAReboot) {
  FakeClock clock;
  HealthMonitor monitor(5.0, clock.fn());  // started at 1000, no heartbeat heard yet
  clock.now = 1004;
  EXPECT_FALSE(monitor.assess("i-1", true, 0).has_value()) << "grace from the monitor's start";
  clock.now = 1006;
  EXPECT_TRUE(monitor.assess("i-1", true, 0).has_value());
  // A node back in service at 1005 is watched from then on.
  EXPECT_FALSE(monitor.assess("i-1", true, 1005).has_value());
  monitor.heartbeat("i-1", json::array());
  monitor.forget("i-1");
  EXPECT_LT(monitor.heartbeat_age("i-1"), 0);
}

TEST(HealthMonitor, AgentFindingsBecomeTheVerdict) {
  FakeClock clock;
  HealthMonitor monitor(5.0, clock.fn());
  monitor.heartbeat("i-1", json::array({{{"Kind", "xid"}, {"Check", "kernel-log"},
                                         {"Detail", "Xid 79: GPU has fallen off the bus"}}}));
  auto verdict = monitor.assess("i-1", true, 990);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->fault, "xid");
  EXPECT_NE(verdict->detail.find("kernel-log"), std::string::npos);
  EXPECT_NE(verdict->detail.find("Xid 79"), std::string::npos);
  monitor.heartbeat("i-1", json::array());
  EXPECT_FALSE(monitor.assess("i-1", true, 990).has_value());
}

}  // namespace
}  // namespace endure::controller
