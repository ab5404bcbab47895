// UpdateClusterSoftware's plan (request checks, rolling batches) and the decision for each
// node of a batch: pure functions, no cluster.
#include <gtest/gtest.h>

#include "controller/core/node_decisions.h"
#include "controller/core/software_update_plan.h"
#include "spec/cluster_spec.h"
#include "spec/provisioning.h"

namespace endure::controller {
namespace {

// controller-0, login-0, worker-0..3.
spec::ClusterLayout layout() {
  spec::ClusterLayout l;
  l.controller_node = "controller-0";
  auto slot = [](const std::string& group, int n, spec::NodeRole role) {
    spec::NodeSlot s;
    s.group = group;
    s.slot = n;
    s.node_name = group + "-" + std::to_string(n);
    s.role = role;
    return s;
  };
  l.nodes = {slot("controller", 0, spec::NodeRole::kController),
             slot("login", 0, spec::NodeRole::kLogin)};
  for (int i = 0; i < 4; ++i) l.nodes.push_back(slot("worker", i, spec::NodeRole::kWorker));
  return l;
}

std::string error_of(const json& request) {
  auto plan = plan_software_update(request, layout());
  return plan ? "" : plan.error().code + ": " + plan.error().message;
}

TEST(SoftwareUpdatePlan, ByDefaultEveryNodeOneAtATimeTheControllerLast) {
  auto plan = plan_software_update({{"ClusterName", "ml"}}, layout());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->remaining, (std::vector<std::string>{"login-0", "worker-0", "worker-1",
                                                       "worker-2", "worker-3", "controller-0"}));
  EXPECT_EQ(plan->batch_size, 1);
  EXPECT_EQ(plan->wait_seconds, 0);
  EXPECT_EQ(plan->id.rfind("su-", 0), 0u);
}

TEST(SoftwareUpdatePlan, NamedGroupsAndARollingPolicy) {
  json request = {{"InstanceGroups", {"worker"}},
                  {"DeploymentConfig",
                   {{"RollingUpdatePolicy",
                     {{"MaximumBatchSize", {{"Type", "CAPACITY_PERCENTAGE"}, {"Value", 50}}}}},
                    {"WaitIntervalInSeconds", 30}}}};
  auto plan = plan_software_update(request, layout());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->remaining,
            (std::vector<std::string>{"worker-0", "worker-1", "worker-2", "worker-3"}));
  EXPECT_EQ(plan->batch_size, 2);
  EXPECT_EQ(plan->wait_seconds, 30);
  request["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumBatchSize"] = {
      {"Type", "INSTANCE_COUNT"}, {"Value", 3}};
  EXPECT_EQ(plan_software_update(request, layout())->batch_size, 3);
  // A small percentage still moves one node at a time.
  request["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumBatchSize"] = {
      {"Type", "CAPACITY_PERCENTAGE"}, {"Value", 1}};
  EXPECT_EQ(plan_software_update(request, layout())->batch_size, 1);
}

TEST(SoftwareUpdatePlan, BadRequestsNameTheFieldAndTheRule) {
  EXPECT_EQ(error_of({{"ImageId", "ami-1"}}),
            "ValidationException: ImageId: endure's nodes run the software of the host they boot "
            "on; leave ImageId out");
  EXPECT_EQ(error_of({{"InstanceGroups", json::array()}}),
            "ValidationException: InstanceGroups: must be a non-empty array of instance group "
            "names");
  EXPECT_EQ(error_of({{"InstanceGroups", {"gpu"}}}),
            "ValidationException: InstanceGroups[0]: the cluster has no instance group gpu with "
            "instances");
  EXPECT_EQ(error_of({{"InstanceGroups", {"worker", "worker"}}}),
            "ValidationException: InstanceGroups[1]: worker is named twice");
  EXPECT_EQ(error_of({{"DeploymentConfig", {{"AutoRollbackConfiguration", json::array()}}}}),
            "ValidationException: DeploymentConfig.AutoRollbackConfiguration: not supported "
            "(RollingUpdatePolicy and WaitIntervalInSeconds are)");
  EXPECT_EQ(error_of({{"DeploymentConfig", {{"WaitIntervalInSeconds", 3601}}}}),
            "ValidationException: DeploymentConfig.WaitIntervalInSeconds: must be an integer "
            "from 0 to 3600");
  EXPECT_EQ(
      error_of(
          {{"DeploymentConfig",
            {{"RollingUpdatePolicy", {{"MaximumBatchSize", {{"Type", "NODES"}, {"Value", 1}}}}}}}}),
      "ValidationException: DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize.Type: "
      "must be INSTANCE_COUNT or CAPACITY_PERCENTAGE");
  EXPECT_EQ(error_of({{"DeploymentConfig",
                       {{"RollingUpdatePolicy",
                         {{"MaximumBatchSize", {{"Type", "INSTANCE_COUNT"}, {"Value", 7}}}}}}}}),
            "ValidationException: DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize.Value: "
            "must be an integer from 1 to 6");
  EXPECT_EQ(error_of({{"DeploymentConfig", {{"RollingUpdatePolicy", json::object()}}}}),
            "ValidationException: DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize: is "
            "required, an object {Type, Value}");
}

TEST(SoftwareUpdatePlan, RoundTripsThroughTheStore) {
  auto plan = plan_software_update({{"ClusterName", "ml"}}, layout());
  ASSERT_TRUE(plan);
  plan->in_flight.push_back({"worker-9", "i-9"});
  plan->batch_done_at = 12.5;
  plan->largest_batch = 2;
  auto back = SoftwareUpdatePlan::from_json(plan->to_json());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->to_json(), plan->to_json());
  EXPECT_FALSE(SoftwareUpdatePlan::from_json(json{{"Id", 1}}));
}

TEST(SoftwareUpdateBatches, NoMoreThanTheBatchSizeAndNoneWhileOneIsInFlight) {
  SoftwareUpdatePlan plan;
  plan.batch_size = 2;
  plan.remaining = {"worker-0", "worker-1", "worker-2", "controller-0"};
  EXPECT_EQ(next_batch(plan, layout(), 100), (std::vector<std::string>{"worker-0", "worker-1"}));
  plan.in_flight = {{"worker-0", "i-0"}};
  EXPECT_TRUE(next_batch(plan, layout(), 100).empty());
}

TEST(SoftwareUpdateBatches, TheWaitIntervalRunsBetweenBatches) {
  SoftwareUpdatePlan plan;
  plan.remaining = {"worker-2"};
  plan.wait_seconds = 30;
  plan.batch_done_at = 100;
  EXPECT_TRUE(next_batch(plan, layout(), 129).empty());
  EXPECT_EQ(next_batch(plan, layout(), 130), (std::vector<std::string>{"worker-2"}));
}

TEST(SoftwareUpdateBatches, TheControllerNodeGoesAlone) {
  SoftwareUpdatePlan plan;
  plan.batch_size = 3;
  plan.remaining = {"worker-3", "controller-0"};
  EXPECT_EQ(next_batch(plan, layout(), 1), (std::vector<std::string>{"worker-3"}));
  plan.remaining = {"controller-0"};
  EXPECT_EQ(next_batch(plan, layout(), 1), (std::vector<std::string>{"controller-0"}));
}

// --- one node of a batch ---

constexpr PendingLimits kUpdateLimits{120, 900, 120};

store::InstanceRow node(const std::string& status) {
  store::InstanceRow r;
  r.instance_id = "i-1";
  r.node_name = "worker-1";
  r.status = *api::parse_node_status(status);
  r.lifecycle_status =
      status == "Running" ? api::LifecycleStatus::kSucceeded : api::LifecycleStatus::kNotStarted;
  r.pid = 7;
  r.recovery_since = 1000;
  return r;
}

PendingObservation seen(const std::string& slurm_state, std::vector<std::string> flags = {}) {
  PendingObservation o;
  o.role = spec::NodeRole::kWorker;
  o.controller_running = true;
  o.now = 1010;
  o.slurm_node = slurm::NodeState{"worker-1", slurm_state, std::move(flags), "", "", ""};
  return o;
}

TEST(SoftwareUpdateNode, AWorkerIsDrainedThenWaitsForItsJobsThenStarts) {
  auto r = node("Running");
  EXPECT_EQ(decide_update(&r, "i-1", seen("allocated"), kUpdateLimits).step, UpdateStep::kDrain);
  auto waiting = decide_update(&r, "i-1", seen("allocated", {"DRAIN"}), kUpdateLimits);
  EXPECT_EQ(waiting.step, UpdateStep::kWaitForJobs);
  EXPECT_EQ(waiting.text, "waiting for its jobs to end before its software update");
  EXPECT_EQ(decide_update(&r, "i-1", seen("idle", {"DRAIN"}), kUpdateLimits).step,
            UpdateStep::kStart);
}

TEST(SoftwareUpdateNode, AControllerOrLoginNodeStartsAtOnce) {
  auto r = node("Running");
  PendingObservation o;
  o.role = spec::NodeRole::kLogin;
  EXPECT_EQ(decide_update(&r, "i-1", o, kUpdateLimits).step, UpdateStep::kStart);
}

TEST(SoftwareUpdateNode, AReplacedNodeIsDoneAndARecoveryGoesFirst) {
  auto r = node("Running");
  EXPECT_EQ(decide_update(&r, "i-0", seen("idle"), kUpdateLimits).step, UpdateStep::kDone);
  EXPECT_EQ(decide_update(nullptr, "i-1", seen("idle"), kUpdateLimits).step, UpdateStep::kDone);
  r.recovery = api::RecoveryAction::kReplace;
  EXPECT_EQ(decide_update(&r, "i-1", seen("idle", {"DRAIN"}), kUpdateLimits).step,
            UpdateStep::kWait);
}

TEST(SoftwareUpdateNode, AMarkedNodeNotYetReimagedIsReimaged) {
  auto r = node("SystemUpdating");
  r.pid = 0;
  EXPECT_EQ(decide_update(&r, "i-1", seen("down"), kUpdateLimits).step, UpdateStep::kReimage);
}

TEST(SoftwareUpdateNode, ItFinishesOnceOnCreateSucceededAndSlurmSeesIt) {
  auto r = node("SystemUpdating");
  r.lifecycle_status = api::LifecycleStatus::kInProgress;
  EXPECT_EQ(decide_update(&r, "i-1", seen("idle", {"DRAIN"}), kUpdateLimits).step,
            UpdateStep::kWait);
  r.lifecycle_status = api::LifecycleStatus::kSucceeded;
  EXPECT_EQ(decide_update(&r, "i-1", seen("down", {"NOT_RESPONDING"}), kUpdateLimits).step,
            UpdateStep::kWait);
  auto done = decide_update(&r, "i-1", seen("idle", {"DRAIN"}), kUpdateLimits);
  EXPECT_EQ(done.step, UpdateStep::kFinish);
  EXPECT_TRUE(done.resume_in_slurm);
}

TEST(SoftwareUpdateNode, AFailedOrLateUpdateIsAFault) {
  auto r = node("SystemUpdating");
  r.lifecycle_status = api::LifecycleStatus::kFailed;
  r.lifecycle_tail = "munged: no key";
  auto failed = decide_update(&r, "i-1", seen("down"), kUpdateLimits);
  EXPECT_EQ(failed.step, UpdateStep::kFail);
  EXPECT_EQ(failed.text, "OnCreate failed on the new software: munged: no key");
  r.lifecycle_status = api::LifecycleStatus::kInProgress;
  auto o = seen("down");
  o.now = 1000 + 1021;
  auto late = decide_update(&r, "i-1", o, kUpdateLimits);
  EXPECT_EQ(late.step, UpdateStep::kFail);
  EXPECT_EQ(late.text, "not back in service 1020 s after its software update");
}

}  // namespace
}  // namespace endure::controller
