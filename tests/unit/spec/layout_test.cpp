// Cluster layouts: hostnames, loopback addresses and ports, stable per slot.
#include "spec/layout.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "spec/cluster_spec.h"
#include "spec/provisioning.h"
#include "support/cluster_layouts.h"

namespace endure::spec {
namespace {

using test::Group;
using test::layout_of;
using test::Worker;

// controller x1, login x1, worker-a (c2) x worker_a_count, worker-b (c4, 2 threads) x3.
ClusterLayout standard(int cluster_index, int worker_a_count = 2) {
  return layout_of({{"controller", "local.c1", 1},
                    {"login", "local.c1", 1},
                    {"worker-a", "local.c2", worker_a_count},
                    {"worker-b", "local.c4", 3, 2}},
                   {{"worker-a", "dev"}, {"worker-b", "batch"}}, cluster_index, "login");
}

// kMaxInstanceGroups groups: the controller and workers g1..g19, each with count_of(g).
template <class CountOf>
ClusterLayout many_groups(int cluster_index, CountOf count_of) {
  std::vector<Group> groups = {{"controller", "local.c1", 1}};
  std::vector<Worker> workers;
  for (int g = 1; g < kMaxInstanceGroups; ++g) {
    std::string name = "g" + std::to_string(g);
    groups.push_back({name, "local.c2", count_of(g)});
    workers.push_back({name, g % 2 ? "odd" : "even"});
  }
  return layout_of(groups, workers, cluster_index);
}

// 20 groups of 3 (the controller 1).
ClusterLayout twenty_groups(int cluster_index) {
  return many_groups(cluster_index, [](int) { return 3; });
}

// The largest counts a valid spec allows where it matters most for ports and addresses:
// the last groups full (64 slots), within the 256-instance cluster limit.
ClusterLayout largest(int cluster_index) {
  return many_groups(cluster_index, [](int g) { return g >= 17 ? kMaxInstancesPerGroup : 3; });
}

bool in_loopback_net(const std::string& address) {
  in_addr a{};
  if (inet_pton(AF_INET, address.c_str(), &a) != 1) return false;
  return (ntohl(a.s_addr) >> 24) == 127;
}

TEST(LayoutTest, NodesAreEveryDesiredSlotByGroupThenSlot) {
  auto layout = standard(1);
  std::vector<std::string> names;
  for (const auto& n : layout.nodes) names.push_back(n.node_name);
  EXPECT_EQ(names, (std::vector<std::string>{"controller-0", "login-0", "worker-a-0", "worker-a-1",
                                             "worker-b-0", "worker-b-1", "worker-b-2"}));
  EXPECT_EQ(layout.cluster_name, "ml");
  EXPECT_EQ(layout.index, 1);
}

TEST(LayoutTest, HostnamesAreGroupDashSlot) {
  EXPECT_EQ(node_name("worker", 0), "worker-0");
  EXPECT_EQ(node_name("gpu-x", 17), "gpu-x-17");
  for (const auto& n : standard(2).nodes) {
    EXPECT_EQ(n.node_name, n.group + "-" + std::to_string(n.slot));
    EXPECT_EQ(n.node_name, node_name(n.group, n.slot));
  }
}

TEST(LayoutTest, AddressesFollowTheSchemeAndAreDistinctLoopback) {
  std::set<std::string> all;
  size_t total = 0;
  for (int c : {1, 2}) {
    auto layout = standard(c);
    for (const auto& n : layout.nodes) {
      EXPECT_EQ(n.address, "127." + std::to_string(100 + c) + "." + std::to_string(n.group_index) +
                               "." + std::to_string(n.slot + 1));
      EXPECT_TRUE(in_loopback_net(n.address)) << n.address;
      all.insert(n.address);
      ++total;
    }
  }
  EXPECT_EQ(all.size(), total);  // distinct within and between clusters 1 and 2
  auto layout = standard(1);
  ASSERT_NE(layout.find("worker-b-2"), nullptr);
  EXPECT_EQ(layout.find("worker-b-2")->address, "127.101.3.3");
  EXPECT_EQ(layout.find("worker-b-2")->group_index, 3);
}

TEST(LayoutTest, PortsDistinctWithinAndBetweenClusters) {
  std::vector<std::function<ClusterLayout(int)>> makers = {[](int c) { return standard(c); },
                                                           twenty_groups};
  for (const auto& make : makers) {
    std::set<int> ports;
    size_t total = 0;
    std::set<std::string> addresses;
    for (int c : {1, 2}) {
      auto layout = make(c);
      EXPECT_EQ(layout.slurmctld_port, kPortBase + (c - 1) * kPortsPerCluster);
      ports.insert(layout.slurmctld_port);
      ++total;
      for (const auto& n : layout.nodes) {
        ports.insert(n.slurmd_port);
        addresses.insert(n.address);
        ++total;
      }
    }
    EXPECT_EQ(ports.size(), total);
    EXPECT_EQ(addresses.size(), total - 2);  // every node but the two slurmctld ports
  }
}

TEST(LayoutTest, TwentyGroupsLayoutIsComplete) {
  auto layout = twenty_groups(1);
  EXPECT_EQ(layout.nodes.size(), 1u + 19u * 3u);
  std::set<std::string> names;
  for (const auto& n : layout.nodes) {
    names.insert(n.node_name);
    EXPECT_TRUE(in_loopback_net(n.address)) << n.address;
  }
  EXPECT_EQ(names.size(), layout.nodes.size());
  ASSERT_NE(layout.find("g19-2"), nullptr);
  EXPECT_EQ(layout.find("g19-2")->address, "127.101.19.3");
}

TEST(LayoutTest, PortsStayBelowTheEphemeralRangeForEveryCluster) {
  std::set<int> ports;
  size_t total = 0;
  for (int c = 1; c <= kMaxClusters; ++c) {
    auto layout = largest(c);
    ASSERT_FALSE(layout.nodes.empty());
    EXPECT_GE(layout.slurmctld_port, 1024);
    EXPECT_LT(layout.slurmctld_port, 32768);
    ports.insert(layout.slurmctld_port);
    ++total;
    for (const auto& n : layout.nodes) {
      EXPECT_GE(n.slurmd_port, 1024) << n.node_name;
      EXPECT_LT(n.slurmd_port, 32768) << "cluster " << c << " " << n.node_name;
      EXPECT_TRUE(in_loopback_net(n.address)) << n.address;
      ports.insert(n.slurmd_port);
      ++total;
    }
  }
  // Every port of every cluster is distinct, even at the largest counts.
  EXPECT_EQ(ports.size(), total);

  auto last = largest(kMaxClusters);
  ASSERT_NE(last.find("g19-63"), nullptr);
  EXPECT_LT(last.find("g19-63")->slurmd_port, 32768);
  EXPECT_EQ(last.find("g19-63")->address, "127." + std::to_string(100 + kMaxClusters) + ".19.64");
}

TEST(LayoutTest, ControllerNodeIsSet) {
  auto layout = standard(3);
  EXPECT_EQ(layout.controller_node, "controller-0");
  EXPECT_EQ(layout.controller_address, "127.103.0.1");
  ASSERT_NE(layout.find("controller-0"), nullptr);
  EXPECT_EQ(layout.find("controller-0")->role, NodeRole::kController);

  // The controller group need not come first.
  auto later =
      layout_of({{"worker", "local.c2", 2}, {"controller", "local.c1", 1}}, {{"worker", "dev"}}, 1);
  EXPECT_EQ(later.controller_node, "controller-0");
  EXPECT_EQ(later.controller_address, "127.101.1.1");
}

TEST(LayoutTest, RolesTypesAndPartitionsPerNode) {
  auto layout = standard(1);
  const NodeSlot* login = layout.find("login-0");
  ASSERT_NE(login, nullptr);
  EXPECT_EQ(login->role, NodeRole::kLogin);
  EXPECT_EQ(login->partition, "");
  const NodeSlot* a = layout.find("worker-a-1");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->role, NodeRole::kWorker);
  EXPECT_EQ(a->partition, "dev");
  EXPECT_EQ(a->type.name, "local.c2");
  EXPECT_EQ(a->type.cpus, 2);
  EXPECT_EQ(a->type.memory_mib, 2048);
  EXPECT_EQ(a->threads_per_core, 1);
  const NodeSlot* b = layout.find("worker-b-0");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->partition, "batch");
  EXPECT_EQ(b->type.cpus, 4);
  EXPECT_EQ(b->type.memory_mib, 4096);
  EXPECT_EQ(b->threads_per_core, 2);
  EXPECT_EQ(layout.find("worker-a-2"), nullptr);
  EXPECT_EQ(layout.find("nope"), nullptr);
}

TEST(LayoutTest, ScalingKeepsExistingSlotsStable) {
  auto small = standard(2, 2);
  auto big = standard(2, 6);
  EXPECT_EQ(big.nodes.size(), small.nodes.size() + 4);
  EXPECT_EQ(big.slurmctld_port, small.slurmctld_port);
  EXPECT_EQ(big.controller_node, small.controller_node);
  EXPECT_EQ(big.controller_address, small.controller_address);
  for (const auto& n : small.nodes) {
    const NodeSlot* same = big.find(n.node_name);
    ASSERT_NE(same, nullptr) << n.node_name;
    EXPECT_EQ(same->address, n.address) << n.node_name;
    EXPECT_EQ(same->slurmd_port, n.slurmd_port) << n.node_name;
    EXPECT_EQ(same->group_index, n.group_index) << n.node_name;
    EXPECT_EQ(same->slot, n.slot) << n.node_name;
  }
  // The new slots continue the group's block without touching the next group's.
  std::set<int> ports;
  for (const auto& n : big.nodes) ports.insert(n.slurmd_port);
  EXPECT_EQ(ports.size(), big.nodes.size());
  ASSERT_NE(big.find("worker-a-5"), nullptr);
  EXPECT_EQ(big.find("worker-a-5")->address, "127.102.2.6");

  // Scaling down keeps the slots that remain where they were.
  auto one = standard(2, 1);
  const NodeSlot* kept = one.find("worker-a-0");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->slurmd_port, small.find("worker-a-0")->slurmd_port);
  EXPECT_EQ(one.find("worker-a-1"), nullptr);
  EXPECT_EQ(one.find("worker-b-0")->slurmd_port, small.find("worker-b-0")->slurmd_port);
}

TEST(LayoutTest, RemovedSlotsAreSkippedAndTheOthersKeepTheirPlaces) {
  // What BatchDeleteClusterNodes leaves: a group of four lost worker-1, its count is three.
  json request = {{"ClusterName", "ml"}, {"InstanceGroups", json::array()}};
  for (auto [name, count] : {std::pair{"controller", 1}, std::pair{"worker", 3}}) {
    request["InstanceGroups"].push_back(
        {{"InstanceGroupName", name},
         {"InstanceType", "local.c1"},
         {"InstanceCount", count},
         {"LifeCycleConfig", {{"SourceS3Uri", "/lc"}, {"OnCreate", "on_create.sh"}}}});
  }
  json params = {{"version", "1.0.0"},
                 {"workload_manager", "slurm"},
                 {"controller_group", "controller"},
                 {"worker_groups", {{{"instance_group_name", "worker"}, {"partition_name", "dev"}}}}};
  auto whole = spec::load_cluster_model(request, params, 1);
  auto less = spec::load_cluster_model(request, params, 1, {{"worker", {1}}});
  ASSERT_TRUE(whole && less);
  std::vector<std::string> names;
  for (const auto& n : less->layout.nodes) names.push_back(n.node_name);
  EXPECT_EQ(names, (std::vector<std::string>{"controller-0", "worker-0", "worker-2", "worker-3"}));
  EXPECT_EQ(less->layout.find("worker-2")->address, whole->layout.find("worker-2")->address);
  EXPECT_EQ(less->layout.find("worker-2")->slurmd_port,
            whole->layout.find("worker-2")->slurmd_port);
}

TEST(LayoutTest, PartitionsInWorkerGroupOrderWithTheirNodes) {
  auto layout = layout_of({{"controller", "local.c1", 1},
                           {"w-b", "local.c2", 2},
                           {"w-a", "local.c2", 1},
                           {"w-c", "local.c4", 1}},
                          {{"w-b", "zeta"}, {"w-a", "alpha"}, {"w-c", "zeta"}}, 1);
  auto parts = layout.partitions();
  using P = std::pair<std::string, std::vector<std::string>>;
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], (P{"zeta", {"w-b-0", "w-b-1", "w-c-0"}}));
  EXPECT_EQ(parts[1], (P{"alpha", {"w-a-0"}}));

  auto std_parts = standard(1).partitions();
  ASSERT_EQ(std_parts.size(), 2u);
  EXPECT_EQ(std_parts[0], (P{"dev", {"worker-a-0", "worker-a-1"}}));
  EXPECT_EQ(std_parts[1], (P{"batch", {"worker-b-0", "worker-b-1", "worker-b-2"}}));
}

TEST(LayoutTest, SameInputSameLayout) {
  auto a = standard(5);
  auto b = standard(5);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].node_name, b.nodes[i].node_name);
    EXPECT_EQ(a.nodes[i].address, b.nodes[i].address);
    EXPECT_EQ(a.nodes[i].slurmd_port, b.nodes[i].slurmd_port);
  }
}

TEST(LayoutTest, WarmSparesTakeTheTopSlotsOfTheirGroupInNoPartition) {
  ClusterLayout layout =
      layout_of({{"controller", "local.c1", 1}, {"worker", "local.c2", 2, 1, 2}}, {{"worker", "dev"}});
  ASSERT_EQ(layout.nodes.size(), 5u);
  const NodeSlot* spare = layout.find("worker-spare-2");
  ASSERT_NE(spare, nullptr);
  EXPECT_TRUE(spare->spare);
  EXPECT_EQ(spare->slot, kMaxInstancesPerGroup - 2);
  EXPECT_EQ(spare->address, "127.101.1.63");
  EXPECT_EQ(spare->slurmd_port, kPortBase + 1 + kMaxInstancesPerGroup + kMaxInstancesPerGroup - 2);
  EXPECT_EQ(spare->role, NodeRole::kWorker);
  EXPECT_EQ(spare->partition, "");
  EXPECT_FALSE(layout.find("worker-1")->spare);
  auto partitions = layout.partitions();
  ASSERT_EQ(partitions.size(), 1u);
  EXPECT_EQ(partitions[0].second, (std::vector<std::string>{"worker-0", "worker-1"}));
}

TEST(LayoutTest, AGroupScaledToZeroKeepsNoSpare) {
  ClusterLayout layout =
      layout_of({{"controller", "local.c1", 1}, {"worker", "local.c2", 0, 1, 2}}, {{"worker", "dev"}});
  EXPECT_EQ(layout.find("worker-spare-1"), nullptr);
}

}  // namespace
}  // namespace endure::spec
