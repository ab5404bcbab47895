// UpdateClusterSoftware on a cluster running an srun --auto-resume=1 job: every worker gets
// fresh software (its OnCreate runs again) in batches of one, and the job is never killed
// nor re-run.
#include <gtest/gtest.h>

#include "auto_resume_fixture.h"

namespace endure::test {
namespace {

class SoftwareUpdate : public AutoResume {};

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(SoftwareUpdate, RollingBatchesWaitForTheJobAndRunEveryOnCreateAgain) {
  const int units = kRanks * 12;
  long long job = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(units, &job));
  Endured& e = *e_;
  long long mark = last_event_id(e, name_);
  auto started = e.cli({"update-cluster-software", "--cluster-name", name_, "--instance-groups",
                        "worker", "--deployment-config",
                        R"({"RollingUpdatePolicy":{"MaximumBatchSize":)"
                        R"({"Type":"INSTANCE_COUNT","Value":1}},"WaitIntervalInSeconds":0})"});
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  auto cluster = e.call("DescribeCluster", {{"ClusterName", name_}});
  ASSERT_TRUE(cluster);
  EXPECT_EQ((*cluster)["ClusterStatus"], "SystemUpdating");
  // A second update while one runs is refused.
  auto again = e.call("UpdateClusterSoftware", {{"ClusterName", name_}});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "ConflictException");

  int most_updating = 0;
  bool job_ran_while_updating = false;
  ASSERT_TRUE(wait_until(
      [&] {
        auto nodes = e.call("ListClusterNodes", {{"ClusterName", name_}});
        if (!nodes) return false;
        int updating = 0;
        for (const auto& n : (*nodes)["ClusterNodeSummaries"]) {
          updating += n["InstanceStatus"]["Status"] == "SystemUpdating";
        }
        most_updating = std::max(most_updating, updating);
        if (updating > 0) {
          auto q = e.exec(name_, "controller-0", "squeue -h -j " + std::to_string(job) + " -o %T");
          job_ran_while_updating |= q.out.find("RUNNING") != std::string::npos;
        }
        auto c = e.call("DescribeCluster", {{"ClusterName", name_}});
        return c && (*c)["ClusterStatus"] == "InService";
      },
      300s))
      << events_after(e, name_, mark).dump(1);
  EXPECT_EQ(most_updating, 1) << "a batch exceeded its size, or no node was seen updating";
  EXPECT_FALSE(job_ran_while_updating) << "a node of the running job was updated";

  ASSERT_TRUE(wait_job_end(job)) << job_output(job);
  expect_ended_well(job, units, 0);

  // One node at a time, each updated once, its OnCreate run a second time.
  auto events = events_after(e, name_, mark);
  int in_flight = 0, most_in_flight = 0;
  for (const auto& ev : events) {
    if (ev["EventType"] == "NodeUpdating") most_in_flight = std::max(most_in_flight, ++in_flight);
    if (ev["EventType"] == "NodeUpdated") --in_flight;
  }
  EXPECT_EQ(most_in_flight, 1) << events.dump(1);
  for (int w = 0; w < kRanks; ++w) {
    std::string node = "worker-" + std::to_string(w);
    auto counts = event_counts(events, node);
    EXPECT_EQ(counts["NodeUpdating"], 1) << node;
    EXPECT_EQ(counts["NodeUpdated"], 1) << node;
    auto log = e.cli({"get-cluster-node-log", "--cluster-name", name_, "--node-id", node});
    EXPECT_EQ(count_of(log.out, "on_create: done"), 2) << node << ":\n" << log.out;
    EXPECT_TRUE(wait_until([&] { return slurm_state(e, name_, node) == "idle"; }, 20s))
        << node << " " << slurm_state(e, name_, node);
  }
  EXPECT_EQ(event_counts(events, "controller-0")["NodeUpdating"], 0) << "only the named group";
  for (const auto& [name, n] : nodes_by_name(e, name_)) EXPECT_EQ(n.status, "Running") << name;
}

}  // namespace
}  // namespace endure::test
