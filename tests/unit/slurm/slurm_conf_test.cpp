// slurm.conf and /etc/hosts rendered from a cluster's layout.
#include "slurm/slurm_conf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "spec/provisioning.h"
#include "support/cluster_layouts.h"

namespace endure::slurm {
namespace {

using test::Group;
using test::layout_of;
using test::Worker;

// controller (c1 x1), login (c1 x1), worker-a (c2 x2, partition dev),
// worker-b (c4 x3, ThreadsPerCore 2, partition batch).
spec::ClusterLayout standard_layout(int cluster_index = 1, int worker_a_count = 2) {
  return layout_of({{"controller", "local.c1", 1},
                    {"login", "local.c1", 1},
                    {"worker-a", "local.c2", worker_a_count},
                    {"worker-b", "local.c4", 3, 2}},
                   {{"worker-a", "dev"}, {"worker-b", "batch"}}, cluster_index, "login");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(text)) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

bool has_line(const std::string& text, const std::string& wanted) {
  for (const auto& line : lines_of(text)) {
    if (line == wanted) return true;
  }
  return false;
}

// "A=1 B=2" as {A: 1, B: 2}.
std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string token;
  while (in >> token) {
    auto eq = token.find('=');
    if (eq == std::string::npos) {
      out[token] = "";
    } else {
      out[token.substr(0, eq)] = token.substr(eq + 1);
    }
  }
  return out;
}

// The NodeName lines, by node name.
std::map<std::string, std::map<std::string, std::string>> node_lines(const std::string& conf) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& line : lines_starting(conf, "NodeName=")) {
    auto f = fields(line);
    EXPECT_FALSE(out.count(f["NodeName"])) << "two lines for " << f["NodeName"];
    out[f["NodeName"]] = f;
  }
  return out;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

TEST(SlurmConfTest, ControllerHostAndPort) {
  auto layout = standard_layout(1);
  std::string conf = render_slurm_conf(layout);
  EXPECT_TRUE(has_line(conf, "ClusterName=ml")) << conf;
  EXPECT_TRUE(has_line(conf, "SlurmctldHost=controller-0(127.101.0.1)")) << conf;
  EXPECT_TRUE(has_line(conf, "SlurmctldPort=16000")) << conf;
  EXPECT_EQ(lines_starting(conf, "SlurmctldHost=").size(), 1u);
  EXPECT_EQ(lines_starting(conf, "SlurmctldPort=").size(), 1u);

  auto third = standard_layout(3);
  std::string conf3 = render_slurm_conf(third);
  EXPECT_TRUE(has_line(conf3, "SlurmctldHost=controller-0(127.103.0.1)")) << conf3;
  EXPECT_TRUE(has_line(
      conf3, "SlurmctldPort=" + std::to_string(spec::kPortBase + 2 * spec::kPortsPerCluster)))
      << conf3;
  EXPECT_TRUE(has_line(conf3, "SlurmctldPort=" + std::to_string(third.slurmctld_port)));
}

TEST(SlurmConfTest, NodesOnHostsKeepTheirSlurmNameWithTheHostsNameAndAddress) {
  auto layout = standard_layout(1);
  spec::place_on_hosts(layout, {{"controller-0", {"gpu-01", "127.0.63.11"}},
                                {"worker-a-1", {"gpu-02", "gpu-02.rack-a.example"}}});
  std::string conf = render_slurm_conf(layout);
  // slurmctld knows itself by its machine's hostname.
  EXPECT_TRUE(has_line(conf, "SlurmctldHost=gpu-01(127.0.63.11)")) << conf;
  auto nodes = node_lines(conf);
  EXPECT_EQ(nodes["worker-a-1"]["NodeHostname"], "gpu-02");
  EXPECT_EQ(nodes["worker-a-1"]["NodeAddr"], "gpu-02.rack-a.example");
  // A node not placed stays the local layout's.
  EXPECT_EQ(nodes["worker-a-0"]["NodeHostname"], "worker-a-0");
  EXPECT_EQ(nodes["worker-a-0"]["NodeAddr"], "127.101.2.1");
  EXPECT_TRUE(layout.find("worker-a-1")->on_host);
  EXPECT_FALSE(layout.find("worker-a-0")->on_host);
}

TEST(SlurmConfTest, OneNodeLinePerWorkerWithAddressPortAndInstanceType) {
  auto layout = standard_layout(2);
  std::string conf = render_slurm_conf(layout);
  auto nodes = node_lines(conf);
  EXPECT_EQ(lines_starting(conf, "NodeName=").size(), 5u);
  ASSERT_EQ(nodes.size(), 5u);
  EXPECT_FALSE(nodes.count("controller-0"));
  EXPECT_FALSE(nodes.count("login-0"));

  for (const auto& n : layout.nodes) {
    if (n.role != spec::NodeRole::kWorker) continue;
    ASSERT_TRUE(nodes.count(n.node_name)) << n.node_name;
    auto& f = nodes[n.node_name];
    EXPECT_EQ(f["NodeAddr"], n.address);
    EXPECT_EQ(f["Port"], std::to_string(n.slurmd_port));
  }
  for (const char* name : {"worker-a-0", "worker-a-1"}) {
    ASSERT_TRUE(nodes.count(name)) << name;
    EXPECT_EQ(nodes[name]["CPUs"], "2");
    EXPECT_EQ(nodes[name]["RealMemory"], "2048");
  }
  for (const char* name : {"worker-b-0", "worker-b-1", "worker-b-2"}) {
    ASSERT_TRUE(nodes.count(name)) << name;
    EXPECT_EQ(nodes[name]["CPUs"], "4");
    EXPECT_EQ(nodes[name]["RealMemory"], "4096");
  }
  // Addresses of cluster 2, group 2 slot 1 and group 3 slot 0, with their ports.
  EXPECT_EQ(nodes["worker-a-1"]["NodeAddr"], "127.102.2.2");
  EXPECT_EQ(nodes["worker-b-0"]["NodeAddr"], "127.102.3.1");
  int base = spec::kPortBase + spec::kPortsPerCluster;
  EXPECT_EQ(nodes["worker-a-1"]["Port"],
            std::to_string(base + 1 + 2 * spec::kMaxInstancesPerGroup + 1));
  // The NodeName doubles as the hostname.
  EXPECT_EQ(nodes["worker-a-1"]["NodeHostname"], "worker-a-1");
}

TEST(SlurmConfTest, ThreadsPerCoreShapesTheCpuTopology) {
  std::string conf = render_slurm_conf(standard_layout());
  auto nodes = node_lines(conf);
  ASSERT_TRUE(nodes.count("worker-b-0"));
  ASSERT_TRUE(nodes.count("worker-a-0"));
  // 4 CPUs with 2 threads per core: 2 cores of 2 threads.
  EXPECT_EQ(nodes["worker-b-0"]["ThreadsPerCore"], "2");
  EXPECT_EQ(nodes["worker-b-0"]["CoresPerSocket"], "2");
  EXPECT_EQ(nodes["worker-b-0"]["Sockets"], "1");
  EXPECT_EQ(nodes["worker-a-0"]["ThreadsPerCore"], "1");
  EXPECT_EQ(nodes["worker-a-0"]["CoresPerSocket"], "2");
  for (auto& [name, f] : nodes) {
    EXPECT_EQ(
        std::stoi(f["Sockets"]) * std::stoi(f["CoresPerSocket"]) * std::stoi(f["ThreadsPerCore"]),
        std::stoi(f["CPUs"]))
        << name;
  }
}

TEST(SlurmConfTest, OnePartitionLinePerPartitionFirstIsDefault) {
  std::string conf = render_slurm_conf(standard_layout());
  auto partitions = lines_starting(conf, "PartitionName=");
  ASSERT_EQ(partitions.size(), 2u) << conf;
  auto dev = fields(partitions[0]);
  auto batch = fields(partitions[1]);
  EXPECT_EQ(dev["PartitionName"], "dev");
  EXPECT_EQ(split_commas(dev["Nodes"]), (std::vector<std::string>{"worker-a-0", "worker-a-1"}));
  EXPECT_EQ(dev["Default"], "YES");
  EXPECT_EQ(batch["PartitionName"], "batch");
  EXPECT_EQ(split_commas(batch["Nodes"]),
            (std::vector<std::string>{"worker-b-0", "worker-b-1", "worker-b-2"}));
  EXPECT_EQ(batch["Default"], "NO");
  EXPECT_EQ(dev["State"], "UP");
  EXPECT_EQ(batch["State"], "UP");
}

TEST(SlurmConfTest, GroupsSharingAPartitionGiveOneLine) {
  auto layout = layout_of(
      {{"controller", "local.c1", 1}, {"worker-a", "local.c2", 2}, {"worker-b", "local.c4", 1}},
      {{"worker-a", "dev"}, {"worker-b", "dev"}});
  std::string conf = render_slurm_conf(layout);
  auto partitions = lines_starting(conf, "PartitionName=");
  ASSERT_EQ(partitions.size(), 1u) << conf;
  auto f = fields(partitions[0]);
  EXPECT_EQ(f["PartitionName"], "dev");
  EXPECT_EQ(f["Default"], "YES");
  auto members = split_commas(f["Nodes"]);
  std::set<std::string> member_set(members.begin(), members.end());
  EXPECT_EQ(member_set, (std::set<std::string>{"worker-a-0", "worker-a-1", "worker-b-0"}));
  EXPECT_EQ(members.size(), 3u);
  EXPECT_EQ(lines_starting(conf, "NodeName=").size(), 3u);
}

TEST(SlurmConfTest, AWarmSpareIsANodeOfNoPartition) {
  auto layout = layout_of({{"controller", "local.c1", 1}, {"worker", "local.c2", 2, 1, 1}},
                          {{"worker", "dev"}});
  std::string conf = render_slurm_conf(layout);
  auto spare = lines_starting(conf, "NodeName=worker-spare-1 ");
  ASSERT_EQ(spare.size(), 1u) << conf;
  EXPECT_EQ(fields(spare[0])["Port"], std::to_string(layout.find("worker-spare-1")->slurmd_port));
  auto f = fields(lines_starting(conf, "PartitionName=")[0]);
  EXPECT_EQ(f["Nodes"], "worker-0,worker-1");
  EXPECT_NE(render_hosts(layout).find(" worker-spare-1\n"), std::string::npos);
}

TEST(SlurmConfTest, ResilienceSettingsArePresent) {
  std::string conf = render_slurm_conf(standard_layout());
  EXPECT_TRUE(has_line(conf, "TaskPlugin=task/none")) << conf;
  EXPECT_TRUE(has_line(conf, "ReturnToService=2")) << conf;
  EXPECT_TRUE(has_line(conf, "ProctrackType=proctrack/linuxproc")) << conf;
  auto scheduler = lines_starting(conf, "SchedulerParameters=");
  ASSERT_EQ(scheduler.size(), 1u);
  auto params = split_commas(scheduler[0].substr(std::string("SchedulerParameters=").size()));
  EXPECT_NE(std::find(params.begin(), params.end(), "permit_job_expansion"), params.end())
      << scheduler[0];
  auto timeout = lines_starting(conf, "SlurmdTimeout=");
  ASSERT_EQ(timeout.size(), 1u);
  std::string seconds = timeout[0].substr(std::string("SlurmdTimeout=").size());
  ASSERT_FALSE(seconds.empty());
  EXPECT_EQ(seconds.find_first_not_of("0123456789"), std::string::npos) << seconds;
  EXPECT_GT(std::stoi(seconds), 0);
  // Every non-comment line is Key=Value (slurm.conf rejects anything else).
  for (const auto& line : lines_of(conf)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_NE(line.find('='), std::string::npos) << line;
  }
}

TEST(SlurmConfTest, RenderingIsDeterministic) {
  std::string a = render_slurm_conf(standard_layout(4));
  std::string b = render_slurm_conf(standard_layout(4));
  EXPECT_EQ(a, b);
  EXPECT_EQ(content_hash(a), content_hash(b));
  EXPECT_EQ(render_hosts(standard_layout(4)), render_hosts(standard_layout(4)));
  // A different cluster index moves addresses and ports: a different file.
  std::string other = render_slurm_conf(standard_layout(5));
  EXPECT_NE(a, other);
  EXPECT_NE(content_hash(a), content_hash(other));
}

TEST(SlurmConfTest, ScalingAGroupChangesNodeLinesAndHash) {
  std::string small = render_slurm_conf(standard_layout(1, 2));
  std::string big = render_slurm_conf(standard_layout(1, 4));
  EXPECT_NE(small, big);
  EXPECT_NE(content_hash(small), content_hash(big));
  auto small_nodes = lines_starting(small, "NodeName=");
  auto big_nodes = lines_starting(big, "NodeName=");
  EXPECT_EQ(small_nodes.size(), 5u);
  EXPECT_EQ(big_nodes.size(), 7u);
  // The nodes that stay keep their lines byte for byte.
  for (const auto& line : small_nodes) {
    EXPECT_NE(std::find(big_nodes.begin(), big_nodes.end(), line), big_nodes.end()) << line;
  }
  auto big_map = node_lines(big);
  EXPECT_TRUE(big_map.count("worker-a-2"));
  EXPECT_TRUE(big_map.count("worker-a-3"));
  auto dev = fields(lines_starting(big, "PartitionName=dev")[0]);
  EXPECT_EQ(split_commas(dev["Nodes"]).size(), 4u);

  // Scaling back down gives the original file again.
  EXPECT_EQ(render_slurm_conf(standard_layout(1, 2)), small);
}

TEST(SlurmConfTest, HostsListEveryNodeAndLocalhost) {
  auto layout = standard_layout(2);
  std::string hosts = render_hosts(layout);
  EXPECT_TRUE(has_line(hosts, "127.0.0.1 localhost")) << hosts;
  EXPECT_EQ(layout.nodes.size(), 7u);
  for (const auto& n : layout.nodes) {
    EXPECT_TRUE(has_line(hosts, n.address + " " + n.node_name)) << n.node_name << "\n" << hosts;
  }
  EXPECT_TRUE(has_line(hosts, "127.102.0.1 controller-0")) << hosts;
  EXPECT_TRUE(has_line(hosts, "127.102.1.1 login-0")) << hosts;
  // One line per node, no more.
  int node_lines_count = 0;
  for (const auto& line : lines_of(hosts)) {
    if (line.rfind("127.102.", 0) == 0) ++node_lines_count;
  }
  EXPECT_EQ(node_lines_count, 7);
}

bool is_hex16(const std::string& s) {
  return s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST(SlurmConfTest, ContentHashIs16HexDigitsAndDiscriminates) {
  for (const std::string& text :
       {std::string(), std::string("a"), std::string("b"), std::string("slurm.conf\n"),
        render_slurm_conf(standard_layout())}) {
    EXPECT_TRUE(is_hex16(content_hash(text))) << content_hash(text);
  }
  EXPECT_NE(content_hash("a"), content_hash("b"));
  EXPECT_NE(content_hash(""), content_hash(" "));
  EXPECT_NE(content_hash("ab"), content_hash("ba"));
  EXPECT_EQ(content_hash("same"), content_hash("same"));
}

TEST(SlurmConfTest, ContentHashIsFnv1a64) {
  // The header promises FNV-1a: these are its published 64-bit reference values.
  EXPECT_EQ(content_hash(""), "cbf29ce484222325");
  EXPECT_EQ(content_hash("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(content_hash("foobar"), "85944171f73967e8");
}

}  // namespace
}  // namespace endure::slurm
