// ScheduledUpdateConfig on real Slurm: a group's schedule comes due by endured's own clock
// and its rolling update runs as UpdateClusterSoftware's does, in batches of the
// schedule's size, every node of the group running its OnCreate again.
#include <gtest/gtest.h>

#include "harness.h"
#include "support/temp_dir.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

TEST(ScheduledUpdate, AGroupsScheduleComesDueAndItsNodesAreUpdatedInBatches) {
  TempDir dir;
  Endured e(dir.path() / "home");
  e.start();
  json spec = make_spec("it-sched", 2);
  spec["InstanceGroups"][1]["ScheduledUpdateConfig"] = {
      {"ScheduleExpression", "rate(1 minute)"},
      {"DeploymentConfig",
       {{"RollingUpdatePolicy", {{"MaximumBatchSize", {{"Type", "INSTANCE_COUNT"}, {"Value", 1}}}}},
        {"WaitIntervalInSeconds", 0},
        {"AutoRollbackConfiguration", {{{"AlarmName", "accepted-not-watched"}}}}}}};
  ASSERT_TRUE(e.call("CreateCluster", spec));
  ASSERT_EQ(e.wait_status("it-sched", {"InService"}, 180s), "InService");
  auto described = e.call("DescribeCluster", {{"ClusterName", "it-sched"}});
  ASSERT_TRUE(described);
  EXPECT_EQ((*described)["InstanceGroups"][1]["ScheduledUpdateConfig"],
            spec["InstanceGroups"][1]["ScheduledUpdateConfig"]);
  // OnCreate runs in a node's lifecycle log, which its update appends to.
  auto oncreate_runs = [&](const std::string& node) {
    auto log = e.cli({"get-cluster-node-log", "--cluster-name", "it-sched", "--node-id", node});
    int n = 0;
    for (size_t at = log.out.find("on_create: done"); at != std::string::npos;
         at = log.out.find("on_create: done", at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(oncreate_runs("worker-0"), 1);

  // Due a minute after it was set: the group's update starts by itself, a node at a time.
  int most_updating = 0;
  bool started = false;
  ASSERT_TRUE(wait_until(
      [&] {
        auto events =
            e.call("ListClusterEvents", {{"ClusterName", "it-sched"}, {"MaxResults", 10000}});
        if (!events) return false;
        for (const auto& ev : (*events)["Events"]) {
          started |= ev["EventType"] == "ScheduledUpdateStarted";
        }
        auto nodes = e.call("ListClusterNodes", {{"ClusterName", "it-sched"}});
        if (nodes) {
          int updating = 0;
          for (const auto& n : (*nodes)["ClusterNodeSummaries"]) {
            updating += n["InstanceStatus"]["Status"] == "SystemUpdating";
            if (n["NodeName"] == "controller-0") {
              EXPECT_NE(n["InstanceStatus"]["Status"], "SystemUpdating") << "outside the group";
            }
          }
          most_updating = std::max(most_updating, updating);
        }
        auto c = e.call("DescribeCluster", {{"ClusterName", "it-sched"}});
        return started && c && (*c)["ClusterStatus"] == "InService" && most_updating > 0;
      },
      240s));
  EXPECT_EQ(most_updating, 1);
  auto events = e.call("ListClusterEvents", {{"ClusterName", "it-sched"}, {"MaxResults", 10000}});
  ASSERT_TRUE(events);
  std::string description;
  for (const auto& ev : (*events)["Events"]) {
    if (ev["EventType"] == "ScheduledUpdateStarted") description = ev["Description"];
  }
  EXPECT_NE(description.find("worker: ScheduledUpdateConfig rate(1 minute) came due at "),
            std::string::npos)
      << description;
  // Both workers ran their OnCreate again; the controller was not touched.
  EXPECT_EQ(oncreate_runs("worker-0"), 2);
  EXPECT_EQ(oncreate_runs("worker-1"), 2);
  EXPECT_EQ(oncreate_runs("controller-0"), 1);
}

}  // namespace
}  // namespace endure::test
