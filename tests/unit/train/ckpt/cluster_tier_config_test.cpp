// A rank's view of the cluster memory tier from the node's files: the credential, and the
// job's nodes with their groups and stores; a tier that is off, and files that are not
// what they should be, said so naming the file and the field; a node moved by a replacement
// found where the hosts file says.
#include "train/ckpt/cluster_tier_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.h"

namespace endure::ckpt {
namespace {

class ClusterTierConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = {dir_.path() / "memory_store.json", dir_.path() / "resource_config.json", {}};
    write(files_.resource_config, R"({"InstanceGroups": [
      {"Name": "controller", "Instances": [{"InstanceName": "ctl-1", "CustomerIpAddress": "127.0.7.1"}]},
      {"Name": "gpu-a", "Instances": [{"InstanceName": "node-1", "CustomerIpAddress": "127.0.7.2"},
                                      {"InstanceName": "node-2", "CustomerIpAddress": "127.0.7.3"}]},
      {"Name": "gpu-b", "Instances": [{"InstanceName": "node-3", "CustomerIpAddress": "127.0.7.4", "Rack": "r2"}]}]})");
    write(files_.memory_store,
          R"({"ClusterName": "c1", "InstanceMemoryAllocationPercentage": 20, "Port": 6830, "Token": "s3cret"})");
  }
  static void write(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }
  test::TempDir dir_{"endure-tier-config-test"};
  ClusterTierFiles files_;
};

TEST_F(ClusterTierConfigTest, TheJobsNodesTheirGroupsAndStores) {
  auto config = load_cluster_tier("node-2", {"node-1", "node-2", "node-3"}, files_);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->token, "s3cret");
  EXPECT_EQ(config->cluster_name, "c1");
  ASSERT_EQ(config->nodes.size(), 3u);
  EXPECT_EQ(config->nodes[0].name, "node-1");
  EXPECT_EQ(config->nodes[0].group, "gpu-a");
  EXPECT_EQ(config->nodes[2].group, "gpu-b");
  EXPECT_EQ(config->nodes[2].rack, "r2");
  EXPECT_EQ(config->stores.at("node-3").address, "127.0.7.4");
  EXPECT_EQ(config->stores.at("node-3").port, 6830);
  EXPECT_FALSE(config->stores.count("ctl-1"));  // not the job's
}

// A warm spare swapped in moves its node to another address: the node's hosts file says
// where it is now, resource_config.json where it was at launch.
TEST_F(ClusterTierConfigTest, TheHostsFileSaysWhereAMovedNodeIsNow) {
  files_.hosts = dir_.path() / "hosts";
  write(files_.hosts, "127.0.0.1 localhost\n::1 localhost node-1\n# 127.0.9.9 node-1\n127.0.7.9 node-2 n2\n");
  auto config = load_cluster_tier("node-1", {"node-1", "node-2"}, files_);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->stores.at("node-2").address, "127.0.7.9");
  EXPECT_EQ(config->stores.at("node-1").address, "127.0.7.2");  // IPv6 lines and comments pass
}

TEST_F(ClusterTierConfigTest, NoJobListMeansEveryInstance) {
  auto config = load_cluster_tier("node-1", {}, files_);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->nodes.size(), 4u);
}

TEST_F(ClusterTierConfigTest, NoMemoryStoreFileMeansTheTierIsOff) {
  std::filesystem::remove(files_.memory_store);
  auto config = load_cluster_tier("node-1", {"node-1"}, files_);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, "TierOff");
}

TEST_F(ClusterTierConfigTest, BadFilesAreNamedWithTheirField) {
  write(files_.memory_store, R"({"ClusterName": "c1", "InstanceMemoryAllocationPercentage": 20, "Port": 6830, "Token": ""})");
  auto config = load_cluster_tier("node-1", {"node-1"}, files_);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, "InvalidConfig");
  EXPECT_NE(config.error().message.find("Token"), std::string::npos);

  write(files_.memory_store, R"({"ClusterName": "c1", "Port": 6830})");
  config = load_cluster_tier("node-1", {"node-1"}, files_);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("memory_store.json"), std::string::npos);

  SetUp();
  config = load_cluster_tier("node-1", {"node-1", "node-9"}, files_);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("node-9"), std::string::npos);

  config = load_cluster_tier("elsewhere", {}, files_);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("elsewhere"), std::string::npos);

  write(files_.resource_config, R"({"InstanceGroups": 3})");
  config = load_cluster_tier("node-1", {}, files_);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("InstanceGroups"), std::string::npos);
}

}  // namespace
}  // namespace endure::ckpt
