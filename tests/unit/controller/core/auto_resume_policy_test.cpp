// judge_step (controller/core/auto_resume_policy.h): does a node fault explain a failed
// step? A pure function of the step's nodes as endured knows them and the clock.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "controller/core/auto_resume_policy.h"
#include "support/text_files.h"

namespace endure {
namespace {

using Hosts = std::vector<std::string>;
using test::contains;

using controller::judge_step;
using controller::StepDecision;
using controller::StepNode;

constexpr double kStart = 1000;   // the step started
constexpr double kFailed = 1100;  // the step failed
constexpr double kSettle = 5;     // heartbeats must come this long after the failure
constexpr double kAfter = kFailed + kSettle + 1;  // a heartbeat late enough

// A healthy node of the cluster: running since before the step, heard after the failure.
StepNode healthy(const std::string& name) {
  StepNode n;
  n.name = name;
  n.known = true;
  n.status = api::NodeStatus::kRunning;
  n.launch_time = kStart - 500;
  n.last_heartbeat = kAfter;
  return n;
}

// A node the job did not hold again after the last resume is at fault whatever it reports
// now, after the nodes judged at fault; a name that is not the step's is left out.
TEST(AutoResumePolicyTest, ANodeTheJobLacksIsAtFaultWhateverItReports) {
  auto j = judge_step({healthy("worker-0"), healthy("worker-1")}, kStart, kFailed, kSettle, 0,
                      {"worker-1", "worker-9"});
  EXPECT_EQ(j.decision, StepDecision::kFault);
  EXPECT_EQ(j.faulty, std::vector<std::string>{"worker-1"});
  EXPECT_EQ(j.reason, "worker-1: not held by the job again after the last resume");

  StepNode bad = healthy("worker-0");
  bad.last_fault_time = kStart + 50;
  bad.last_fault = "NodeUnhealthy: xid 79";
  j = judge_step({healthy("worker-1"), bad}, kStart, kFailed, kSettle, 0, {"worker-1", "worker-0"});
  EXPECT_EQ(j.faulty, (std::vector<std::string>{"worker-0", "worker-1"}));
  EXPECT_EQ(j.reason, "worker-0: NodeUnhealthy: xid 79");
}

TEST(AutoResumePolicyTest, UnhealthyVerdictDuringTheStepIsAFault) {
  StepNode bad = healthy("worker-1");
  bad.last_fault_time = kStart + 50;
  bad.last_fault = "NodeUnhealthy: xid 79";
  auto j = judge_step({healthy("worker-0"), bad}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kFault);
  EXPECT_EQ(j.faulty, Hosts{"worker-1"});
  EXPECT_TRUE(contains(j.reason, "worker-1")) << j.reason;
  EXPECT_TRUE(contains(j.reason, "xid 79")) << j.reason;
}

TEST(AutoResumePolicyTest, AVerdictWithoutTextIsStillAFault) {
  StepNode bad = healthy("worker-1");
  bad.last_fault_time = kStart + 50;
  auto j = judge_step({bad}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kFault);
  EXPECT_EQ(j.faulty, Hosts{"worker-1"});
}

TEST(AutoResumePolicyTest, VerdictJustBeforeTheRecordedStartStillCounts) {
  StepNode bad = healthy("worker-1");
  bad.last_fault_time = kStart - 0.5;  // within the 1 s slack
  bad.last_fault = "NodeUnhealthy: hang";
  auto j = judge_step({bad}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kFault);
  EXPECT_EQ(j.faulty, Hosts{"worker-1"});
}

TEST(AutoResumePolicyTest, VerdictFromBeforeTheStepIsNotAFault) {
  StepNode old = healthy("worker-1");
  old.last_fault_time = kStart - 1.5;  // older than start - 1 s
  old.last_fault = "NodeUnhealthy: hang";
  auto j = judge_step({healthy("worker-0"), old}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kHealthy) << j.reason;
  EXPECT_TRUE(j.faulty.empty());
}

// A warm spare makes the job whole within the slack: the re-run's own failure (or its
// success) is not blamed on the fault the resume already repaired.
TEST(AutoResumePolicyTest, AVerdictTheLastResumeRepairedIsNotAFaultOfTheReRun) {
  StepNode repaired = healthy("worker-1");
  repaired.last_fault_time = kStart - 0.8;  // within the slack
  repaired.last_fault = "NodeUnhealthy: ecc";
  auto j = judge_step({repaired}, kStart, kFailed, kSettle, /*handled_until=*/kStart - 0.2);
  EXPECT_EQ(j.decision, StepDecision::kHealthy) << j.reason;
  repaired.last_fault_time = kStart + 10;  // a new verdict after the job was whole again
  j = judge_step({repaired}, kStart, kFailed, kSettle, kStart - 0.2);
  EXPECT_EQ(j.decision, StepDecision::kFault);
}

TEST(AutoResumePolicyTest, NodeReplacedDuringTheStepIsAFault) {
  StepNode replaced = healthy("worker-2");
  replaced.launch_time = kStart + 30;
  auto j = judge_step({healthy("worker-0"), replaced}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kFault);
  EXPECT_EQ(j.faulty, Hosts{"worker-2"});
  EXPECT_TRUE(contains(j.reason, "worker-2")) << j.reason;
}

TEST(AutoResumePolicyTest, RebootUnderWayIsAFault) {
  StepNode rebooting = healthy("worker-3");
  rebooting.recovery = api::RecoveryAction::kReboot;
  auto j = judge_step({rebooting, healthy("worker-0")}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kFault);
  EXPECT_EQ(j.faulty, Hosts{"worker-3"});
  EXPECT_TRUE(contains(j.reason, "worker-3")) << j.reason;
  EXPECT_TRUE(contains(j.reason, "Reboot")) << j.reason;
}

TEST(AutoResumePolicyTest, NodeNotRunningIsAFault) {
  for (const std::optional<api::NodeStatus> status :
       {std::optional(api::NodeStatus::kPending), std::optional(api::NodeStatus::kShuttingDown),
        std::optional(api::NodeStatus::kFailure), std::optional<api::NodeStatus>()}) {
    SCOPED_TRACE(std::string("status \"") + (status ? api::name(*status) : "") + "\"");
    StepNode down = healthy("worker-1");
    down.status = status;
    auto j = judge_step({healthy("worker-0"), down}, kStart, kFailed, kSettle);
    EXPECT_EQ(j.decision, StepDecision::kFault);
    EXPECT_EQ(j.faulty, Hosts{"worker-1"});
    EXPECT_TRUE(contains(j.reason, "worker-1")) << j.reason;
  }
}

TEST(AutoResumePolicyTest, AllNodesHeardAfterTheSettleTimeAndNoFaultIsHealthy) {
  StepNode exact = healthy("worker-1");
  exact.last_heartbeat = kFailed + kSettle;  // exactly at the bound is enough
  auto j = judge_step({healthy("worker-0"), exact}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kHealthy) << j.reason;
  EXPECT_TRUE(j.faulty.empty());
  EXPECT_STREQ(controller::decision_name(j.decision), "Healthy");
}

TEST(AutoResumePolicyTest, ANodeNotHeardSinceTheSettleTimeIsPending) {
  StepNode quiet = healthy("worker-1");
  quiet.last_heartbeat = kFailed + kSettle - 0.5;
  auto j = judge_step({healthy("worker-0"), quiet}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kPending);
  EXPECT_TRUE(j.faulty.empty());
  EXPECT_TRUE(contains(j.reason, "worker-1")) << j.reason;
  EXPECT_STREQ(controller::decision_name(j.decision), "Pending");
}

TEST(AutoResumePolicyTest, NodeNeverHeardIsPending) {
  StepNode silent = healthy("worker-1");
  silent.last_heartbeat = 0;
  auto j = judge_step({silent}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kPending);
}

TEST(AutoResumePolicyTest, UnknownNodesAreIgnored) {
  // Not endure's nodes: whatever they look like, they neither fault nor hold the answer.
  StepNode stranger;
  stranger.name = "elsewhere-0";
  stranger.known = false;
  stranger.status = std::nullopt;
  stranger.recovery = api::RecoveryAction::kReplace;
  stranger.launch_time = kStart + 10;
  stranger.last_fault_time = kStart + 10;
  stranger.last_fault = "NodeUnhealthy: crash";

  auto only_unknown = judge_step({stranger}, kStart, kFailed, kSettle);
  EXPECT_EQ(only_unknown.decision, StepDecision::kHealthy) << only_unknown.reason;
  EXPECT_TRUE(only_unknown.faulty.empty());

  auto mixed = judge_step({stranger, healthy("worker-0")}, kStart, kFailed, kSettle);
  EXPECT_EQ(mixed.decision, StepDecision::kHealthy) << mixed.reason;
  EXPECT_TRUE(mixed.faulty.empty());
}

TEST(AutoResumePolicyTest, SeveralFaultyNodesAreAllListed) {
  StepNode unhealthy = healthy("worker-1");
  unhealthy.last_fault_time = kStart + 20;
  unhealthy.last_fault = "NodeUnhealthy: ecc";
  StepNode replaced = healthy("worker-2");
  replaced.launch_time = kStart + 40;
  StepNode rebooting = healthy("worker-4");
  rebooting.recovery = api::RecoveryAction::kReboot;
  auto j = judge_step({unhealthy, healthy("worker-0"), replaced, healthy("worker-3"), rebooting},
                      kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kFault);
  EXPECT_EQ(j.faulty, (Hosts{"worker-1", "worker-2", "worker-4"}));
  EXPECT_FALSE(j.reason.empty());
  EXPECT_STREQ(controller::decision_name(j.decision), "Fault");
}

TEST(AutoResumePolicyTest, FaultWinsOverAMissingHeartbeat) {
  StepNode quiet = healthy("worker-0");
  quiet.last_heartbeat = 0;
  StepNode rebooting = healthy("worker-1");
  rebooting.recovery = api::RecoveryAction::kReboot;
  auto j = judge_step({quiet, rebooting}, kStart, kFailed, kSettle);
  EXPECT_EQ(j.decision, StepDecision::kFault);
  EXPECT_EQ(j.faulty, Hosts{"worker-1"});
}

}  // namespace
}  // namespace endure
