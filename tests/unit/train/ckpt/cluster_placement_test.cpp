// Where the memory tier puts a rank's replicas: never on its own node, spread over groups
// and racks, even across stores, and the same wherever it is computed.
#include "train/ckpt/cluster_placement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace endure::ckpt {
namespace {

std::vector<StoreNode> plain(int n) {
  std::vector<StoreNode> nodes;
  for (int i = 1; i <= n; ++i) nodes.push_back({"node-" + std::to_string(i), "workers", ""});
  return nodes;
}

TEST(ClusterPlacement, NeverOnItsOwnNodeForEveryKAndSize) {
  for (int n = 1; n <= 9; ++n)
    for (int k = 0; k <= 4; ++k)
      for (const auto& own : plain(n)) {
        auto picks = replica_nodes(plain(n), own.name, k);
        EXPECT_EQ(static_cast<int>(picks.size()), std::min(k, n - 1)) << n << " nodes, k " << k;
        std::set<std::string> distinct(picks.begin(), picks.end());
        EXPECT_EQ(distinct.size(), picks.size());
        EXPECT_FALSE(distinct.count(own.name)) << own.name << " holds its own replica";
      }
}

TEST(ClusterPlacement, AlikeNodesFormARingOfSuccessors) {
  auto nodes = plain(4);
  EXPECT_EQ(replica_nodes(nodes, "node-1", 1), std::vector<std::string>{"node-2"});
  EXPECT_EQ(replica_nodes(nodes, "node-4", 1), std::vector<std::string>{"node-1"});
  EXPECT_EQ(replica_nodes(nodes, "node-3", 2), (std::vector<std::string>{"node-4", "node-1"}));
}

TEST(ClusterPlacement, TheListsOrderDoesNotMatter) {
  auto nodes = plain(5);
  auto reversed = std::vector<StoreNode>(nodes.rbegin(), nodes.rend());
  for (const auto& own : nodes)
    EXPECT_EQ(replica_nodes(nodes, own.name, 2), replica_nodes(reversed, own.name, 2));
}

TEST(ClusterPlacement, ReplicasGoToAnotherGroupAndSpreadOverItsStores) {
  std::vector<StoreNode> nodes = {{"a-1", "a", ""}, {"a-2", "a", ""}, {"b-1", "b", ""}, {"b-2", "b", ""}};
  std::map<std::string, int> held;
  for (const auto& own : nodes) {
    auto picks = replica_nodes(nodes, own.name, 1);
    ASSERT_EQ(picks.size(), 1u);
    EXPECT_NE(picks[0].substr(0, 1), own.group) << own.name << " -> " << picks[0];
    ++held[picks[0]];
  }
  for (const auto& n : nodes) EXPECT_EQ(held[n.name], 1) << n.name;
}

TEST(ClusterPlacement, TwoReplicasCoverTwoOtherGroupsBeforeRepeatingOne) {
  std::vector<StoreNode> nodes = {{"a-1", "a", ""}, {"a-2", "a", ""}, {"b-1", "b", ""},
                                  {"c-1", "c", ""}, {"c-2", "c", ""}};
  for (const auto& own : nodes) {
    auto picks = replica_nodes(nodes, own.name, 2);
    ASSERT_EQ(picks.size(), 2u);
    std::set<std::string> groups;
    for (const auto& p : picks) groups.insert(p.substr(0, 1));
    EXPECT_EQ(groups.size(), 2u) << own.name;
    EXPECT_FALSE(groups.count(own.group)) << own.name;
  }
}

TEST(ClusterPlacement, RacksSpreadWithinOneGroup) {
  std::vector<StoreNode> nodes = {{"n-1", "g", "r1"}, {"n-2", "g", "r1"}, {"n-3", "g", "r2"},
                                  {"n-4", "g", "r2"}};
  EXPECT_EQ(replica_nodes(nodes, "n-1", 1), std::vector<std::string>{"n-3"});
  EXPECT_EQ(replica_nodes(nodes, "n-2", 1), std::vector<std::string>{"n-4"});
  EXPECT_EQ(replica_nodes(nodes, "n-3", 1), std::vector<std::string>{"n-1"});
}

TEST(ClusterPlacement, OneGroupAloneStillGetsAReplicaInItself) {
  std::vector<StoreNode> nodes = {{"a-1", "a", ""}, {"a-2", "a", ""}, {"b-1", "b", ""}};
  // k 2 from b-1: both of a's nodes, the only other ones.
  auto picks = replica_nodes(nodes, "b-1", 2);
  EXPECT_EQ(std::set<std::string>(picks.begin(), picks.end()), (std::set<std::string>{"a-1", "a-2"}));
  // k 2 from a-1: b-1 first (another group), then a-2.
  EXPECT_EQ(replica_nodes(nodes, "a-1", 2), (std::vector<std::string>{"b-1", "a-2"}));
}

TEST(ClusterPlacement, ANodeOutsideTheListStartsAfterItsName) {
  EXPECT_EQ(replica_nodes(plain(3), "node-15", 1), std::vector<std::string>{"node-2"});
  EXPECT_TRUE(replica_nodes({}, "node-1", 1).empty());
}

}  // namespace
}  // namespace endure::ckpt
