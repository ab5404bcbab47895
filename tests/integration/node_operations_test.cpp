// The cloud API's node operations beyond reboot and replace: BatchDeleteClusterNodes and
// DescribeClusterEvent, on a real cluster.
#include <gtest/gtest.h>

#include "cluster_fixture.h"

namespace endure::test {
namespace {

class NodeOperations : public ClusterFixture {};

TEST_F(NodeOperations, BatchDeleteRemovesTwoWorkersAndRefusesTheController) {
  start_cluster("it-delete", 4);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  const std::string id = cluster_id(e, name_);

  auto too_many =
      e.call("BatchDeleteClusterNodes",
             {{"ClusterName", name_}, {"NodeIds", json(std::vector<std::string>(100, "i-1"))}});
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().code, "ValidationException") << too_many.error().message;

  auto out = e.cli({"batch-delete-cluster-nodes", "--cluster-name", name_, "--node-ids",
                    before["worker-1"].id, before["worker-2"].id, before["controller-0"].id,
                    "i-00000000000000000"});
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  json reply = json::parse(out.out);
  EXPECT_EQ(reply["Successful"], json({before["worker-1"].id, before["worker-2"].id})) << out.out;
  ASSERT_EQ(reply["Failed"].size(), 2u) << out.out;
  EXPECT_EQ(reply["Failed"][0]["NodeId"], before["controller-0"].id);
  EXPECT_EQ(reply["Failed"][0]["Code"], "InvalidNodeStatus");
  EXPECT_EQ(reply["Failed"][1]["Code"], "NodeIdNotFound");

  ASSERT_TRUE(wait_until(
      [&] {
        auto c = e.call("DescribeCluster", {{"ClusterName", name_}});
        return c && (*c)["ClusterStatus"] == "InService" && nodes_by_name(e, name_).size() == 3u;
      },
      120s))
      << events_after(e, name_, 0).dump(1);
  auto sinfo = e.exec(name_, "controller-0", "sinfo -h -N -o %N");
  EXPECT_EQ(sinfo.out.find("worker-1"), std::string::npos) << sinfo.out;
  EXPECT_EQ(sinfo.out.find("worker-2"), std::string::npos) << sinfo.out;
  EXPECT_NE(sinfo.out.find("worker-3"), std::string::npos) << sinfo.out;
  auto after = nodes_by_name(e, name_);
  EXPECT_EQ(after.size(), 3u);
  for (const char* kept : {"controller-0", "worker-0", "worker-3"}) {
    EXPECT_EQ(after[kept].id, before[kept].id) << kept;
    EXPECT_EQ(after[kept].status, "Running") << kept;
  }
  EXPECT_EQ(instance_processes(e.home(), id).size(), 3u) << "the deleted instances live on";
  for (const char* gone : {"worker-1", "worker-2"}) {
    EXPECT_FALSE(
        std::filesystem::exists(e.home() / "clusters" / id / "instances" / before[gone].id))
        << gone << "'s files outlived it";
  }
  auto cluster = e.call("DescribeCluster", {{"ClusterName", name_}});
  ASSERT_TRUE(cluster);
  for (const auto& g : (*cluster)["InstanceGroups"]) {
    if (g["InstanceGroupName"] == "worker") {
      EXPECT_EQ(g["TargetCount"], 2) << g.dump();
    }
  }
  auto job = e.exec(name_, "controller-0", "srun -N2 -w worker-0,worker-3 hostname");
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
}

TEST_F(NodeOperations, DescribeClusterEventShowsOneEventAsTheListDoes) {
  start_cluster("it-event", 1);
  Endured& e = *e_;
  auto events = events_after(e, name_, 0);
  ASSERT_FALSE(events.empty());
  const json& last = events.back();
  auto one = e.cli({"describe-cluster-event", "--cluster-name", name_, "--event-id",
                    std::to_string(last["EventId"].get<long long>())});
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_EQ(json::parse(one.out)["Event"], last);
  auto missing = e.call("DescribeClusterEvent", {{"ClusterName", name_}, {"EventId", 999999}});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "ResourceNotFound");
  // A MaxResults past 32 bits is refused, not wrapped (4294967297 would read as 1).
  for (json max : {json(4294967297LL), json(10001), json(0), json(18446744073709551615ULL)}) {
    auto listed = e.call("ListClusterEvents", {{"ClusterName", name_}, {"MaxResults", max}});
    ASSERT_FALSE(listed) << max << ": " << listed->dump();
    EXPECT_EQ(listed.error().message, "MaxResults: must be an integer from 1 to 10000") << max;
  }
}

}  // namespace
}  // namespace endure::test
