// BatchAddClusterNodes on real Slurm: nodes added with a ClientToken join the cluster once
// however often the call is made again, each known by its NodeLogicalId before it has an
// instance and after its instance is replaced; a group that cannot grow is answered in
// Failed while the others grow.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "harness.h"
#include "support/temp_dir.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

std::set<std::string> sinfo_nodes(const Endured& e, const std::string& cluster) {
  std::set<std::string> out;
  std::istringstream in(e.exec(cluster, "controller-0", "sinfo -h -N -o %N").out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

// NodeLogicalId by node name, of the cluster's live nodes.
std::map<std::string, std::string> logical_ids(const Endured& e, const std::string& cluster) {
  std::map<std::string, std::string> out;
  auto nodes = e.call("ListClusterNodes", {{"ClusterName", cluster}});
  if (!nodes) return out;
  for (const auto& n : (*nodes)["ClusterNodeSummaries"]) {
    out[n.value("NodeName", "")] = n.value("NodeLogicalId", "");
  }
  return out;
}

TEST(NodeAddition, TheSameClientTokenAddsOnceAndTheIdsOutliveAReplacement) {
  TempDir dir;
  Endured e(dir.path() / "home");
  e.start();
  ASSERT_TRUE(e.call("CreateCluster", make_spec("it-add", 1)));
  ASSERT_EQ(e.wait_status("it-add", {"InService"}, 180s), "InService");
  auto before = logical_ids(e, "it-add");
  ASSERT_EQ(before.size(), 2u);
  for (const auto& [node, id] : before) EXPECT_EQ(id.rfind(node + "-", 0), 0u) << id;

  const json request = {{"ClusterName", "it-add"},
                        {"ClientToken", "add-two-workers"},
                        {"NodesToAdd",
                         {{{"InstanceGroupName", "worker"}, {"IncrementTargetCountBy", 2}},
                          {{"InstanceGroupName", "gpu"}, {"IncrementTargetCountBy", 1}},
                          {{"InstanceGroupName", "controller"}, {"IncrementTargetCountBy", 1}}}}};
  auto first = e.call("BatchAddClusterNodes", request);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_EQ((*first)["Successful"].size(), 2u) << first->dump();
  std::set<std::string> added;
  for (const auto& s : (*first)["Successful"]) {
    EXPECT_EQ(s["InstanceGroupName"], "worker");
    added.insert(s["NodeLogicalId"].get<std::string>());
  }
  ASSERT_EQ((*first)["Failed"].size(), 2u);
  EXPECT_EQ((*first)["Failed"][0]["ErrorCode"], "InstanceGroupNotFound");
  EXPECT_EQ((*first)["Failed"][1]["ErrorCode"], "InvalidInstanceGroupStatus");
  EXPECT_EQ((*first)["Failed"][1]["FailedCount"], 1);

  // Made again (a retry after a lost answer): the same ids, nothing added twice.
  auto again = e.call("BatchAddClusterNodes", request);
  ASSERT_TRUE(again) << again.error().message;
  std::set<std::string> answered;
  for (const auto& s : (*again)["Successful"])
    answered.insert(s["NodeLogicalId"].get<std::string>());
  EXPECT_EQ(answered, added);
  ASSERT_EQ(e.wait_status("it-add", {"InService"}, 180s), "InService");
  EXPECT_EQ(sinfo_nodes(e, "it-add"), (std::set<std::string>{"worker-0", "worker-1", "worker-2"}));
  auto described = e.call("DescribeCluster", {{"ClusterName", "it-add"}});
  ASSERT_TRUE(described);
  EXPECT_EQ((*described)["InstanceGroups"][1]["TargetCount"], 3);
  EXPECT_EQ((*described)["InstanceGroups"][1]["CurrentCount"], 3);
  EXPECT_FALSE((*described)["InstanceGroups"][1].contains("ActiveOperations"));
  // Once more, now that they run: the same ids, Running.
  again = e.call("BatchAddClusterNodes", request);
  ASSERT_TRUE(again);
  for (const auto& s : (*again)["Successful"]) EXPECT_EQ(s["Status"], "Running") << again->dump();
  EXPECT_EQ(sinfo_nodes(e, "it-add").size(), 3u);

  // The same token with another request is refused, and adds nothing.
  json other = request;
  other["NodesToAdd"] = {{{"InstanceGroupName", "worker"}, {"IncrementTargetCountBy", 1}}};
  auto refused = e.call("BatchAddClusterNodes", other);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "ValidationException");
  EXPECT_NE(refused.error().message.find("ClientToken: was used"), std::string::npos);

  // The ids known before are kept; the new ones are the added nodes'.
  auto now = logical_ids(e, "it-add");
  EXPECT_EQ(now["worker-0"], before["worker-0"]);
  EXPECT_EQ(now["controller-0"], before["controller-0"]);
  EXPECT_EQ((std::set<std::string>{now["worker-1"], now["worker-2"]}), added);

  // A replacement keeps the node's id: DescribeClusterNode finds the new instance by it.
  std::string id = now["worker-1"];
  auto node = e.call("DescribeClusterNode", {{"ClusterName", "it-add"}, {"NodeId", id}});
  ASSERT_TRUE(node) << node.error().message;
  std::string old_instance = (*node)["NodeDetails"]["InstanceId"];
  auto replaced =
      e.call("BatchReplaceClusterNodes", {{"ClusterName", "it-add"}, {"NodeIds", {id}}});
  ASSERT_TRUE(replaced);
  ASSERT_EQ((*replaced)["Successful"], json::array({id})) << replaced->dump();
  ASSERT_TRUE(wait_until(
      [&] {
        auto n = e.call("DescribeClusterNode", {{"ClusterName", "it-add"}, {"NodeId", id}});
        return n && (*n)["NodeDetails"]["InstanceId"] != old_instance &&
               (*n)["NodeDetails"]["InstanceStatus"]["Status"] == "Running";
      },
      120s));
  EXPECT_EQ(logical_ids(e, "it-add")["worker-1"], id);

  // Deleted by its id, the node's id goes with it; a node added later gets a new one.
  auto deleted = e.call("BatchDeleteClusterNodes",
                        {{"ClusterName", "it-add"}, {"NodeIds", {now["worker-2"]}}});
  ASSERT_TRUE(deleted);
  EXPECT_EQ((*deleted)["Successful"], json::array({now["worker-2"]}));
  ASSERT_EQ(e.wait_status("it-add", {"InService"}, 120s), "InService");
  EXPECT_EQ(sinfo_nodes(e, "it-add"), (std::set<std::string>{"worker-0", "worker-1"}));

  // Through the CLI: a COUNT that is not a whole number is refused before anything is sent;
  // the node added gets an id no node had before.
  auto bad = e.cli({"batch-add-cluster-nodes", "--cluster-name", "it-add", "--nodes-to-add",
                    "worker=1x"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("--nodes-to-add: must be GROUP=COUNT"), std::string::npos) << bad.err;
  auto one = e.cli({"batch-add-cluster-nodes", "--cluster-name", "it-add", "--nodes-to-add",
                    "worker=1", "--client-token", "cli-1"});
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  json reply = json::parse(one.out);
  ASSERT_EQ(reply["Successful"].size(), 1u) << one.out;
  std::string fresh = reply["Successful"][0]["NodeLogicalId"];
  for (const auto& [node, id] : now) EXPECT_NE(fresh, id) << node;
  ASSERT_EQ(e.wait_status("it-add", {"InService"}, 120s), "InService");
  EXPECT_EQ(logical_ids(e, "it-add").size(), 4u);
}

}  // namespace
}  // namespace endure::test
