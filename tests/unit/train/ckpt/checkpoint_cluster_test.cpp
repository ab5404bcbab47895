// The checkpoint engine with the cluster memory tier, over real stores on three loopback
// addresses (a node each) and three ranks as threads: saves to the memory tiers alone reach
// the stores, a restarted rank restores from its own node's store with nothing read from
// disk, a crashed node's rank from its replica, bit for bit, and the report names the copy;
// with both copies gone it falls back to the disk and says so; bad options change nothing.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "endure/checkpoint.h"
#include "memstore/data_server.h"
#include "memstore/server.h"
#include "support/checkpoint_support.h"
#include "support/temp_dir.h"

namespace endure::ckpt {
namespace {

const std::vector<std::string> kNodes = {"node-1", "node-2", "node-3"};
const std::vector<std::string> kAddresses = {"127.0.0.11", "127.0.0.12", "127.0.0.13"};

struct Store {
  test::TempDir dir{"endure-ckpt-cluster-store"};
  std::unique_ptr<memstore::Arena> arena;
  std::unique_ptr<memstore::StoreServer> http;
  std::unique_ptr<memstore::DataServer> data;
  void stop() {
    data->stop();
    http->stop();
  }
};

class CheckpointClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One port free on all three addresses, as a cluster's stores all use one.
    for (int attempt = 0; attempt < 30 && stores_.empty(); ++attempt) {
      int port = 21000 + (::getpid() * 7 + attempt * 53) % 20000;
      std::vector<std::unique_ptr<Store>> started;
      for (const auto& address : kAddresses) {
        auto s = std::make_unique<Store>();
        s->arena = std::move(*memstore::Arena::open(s->dir.path(), 64u << 20));
        s->http = std::make_unique<memstore::StoreServer>(*s->arena, "tok");
        s->data = std::make_unique<memstore::DataServer>(*s->arena, "tok");
        if (!s->http->start(address, port) || !s->data->start(address, port + 1)) break;
        started.push_back(std::move(s));
      }
      if (started.size() == kNodes.size()) stores_ = std::move(started), port_ = port;
    }
    ASSERT_EQ(stores_.size(), 3u);
    std::ofstream(config_.path() / "memory_store.json")
        << json{{"ClusterName", "c1"}, {"InstanceMemoryAllocationPercentage", 20}, {"Port", port_}, {"Token", "tok"}}.dump();
    json instances = json::array();
    for (size_t i = 0; i < kNodes.size(); ++i)
      instances.push_back({{"InstanceName", kNodes[i]}, {"CustomerIpAddress", kAddresses[i]}});
    std::ofstream(config_.path() / "resource_config.json")
        << json{{"InstanceGroups", json::array({{{"Name", "workers"}, {"Instances", instances}}})}}.dump();
  }

  Options options(int rank) {
    Options o;
    o.dir = shared_.path();
    o.rank = rank;
    o.world = 3;
    o.cluster_node = kNodes[rank];
    o.cluster_rank_nodes = kNodes;
    o.cluster_config_dir = config_.path();
    o.cluster_commit_timeout_seconds = 10;
    return o;
  }

  // Every rank saves `step` (to the memory tiers alone unless `disk`), as threads.
  void save_all(int64_t step, bool disk) {
    std::vector<std::thread> ranks;
    for (int r = 0; r < 3; ++r)
      ranks.emplace_back([&, r] {
        auto c = open_ok(options(r));
        auto w = pattern(step * 10 + r, 300000);
        ASSERT_TRUE(c->save(step, {{"weights", w.data(), w.size()}}, {{"step", step}},
                            disk ? Tiers::all : Tiers::memory));
        ASSERT_TRUE(c->wait());
      });
    for (auto& t : ranks) t.join();
  }

  // Rank r's newest step as a restarted rank restores it.
  Result<CheckpointInfo> restore(int r, std::vector<uint8_t>& into) {
    auto c = open_ok(options(r));
    into.assign(300000, 0);
    return c->load_into(-1, {{"weights", into.data(), into.size()}});
  }

  test::TempDir shared_{"endure-ckpt-cluster-shared"}, config_{"endure-ckpt-cluster-config"};
  std::vector<std::unique_ptr<Store>> stores_;
  int port_ = 0;
};

TEST_F(CheckpointClusterTest, ARestartedRankRestoresFromItsOwnNodeWithNothingFromDisk) {
  save_all(1, true);
  save_all(2, false);
  save_all(3, false);
  auto listed = open_ok(options(0))->list();
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed[0].step, 3);
  EXPECT_EQ(listed[0].tiers, std::vector<std::string>{"cluster"});
  for (int r = 0; r < 3; ++r) {
    std::vector<uint8_t> w;
    auto info = restore(r, w);
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(info->step, 3);
    EXPECT_EQ(info->tiers, std::vector<std::string>{"cluster own node " + kNodes[r]});
    EXPECT_EQ(info->bytes_read, 300000u + 16u);
    EXPECT_EQ(w, pattern(30 + r, 300000)) << "rank " << r;
  }
  // The disk holds only the step saved to every tier.
  EXPECT_TRUE(std::filesystem::exists(shared_.path() / "step-000000000001" / "MANIFEST.json"));
  EXPECT_FALSE(std::filesystem::exists(shared_.path() / "step-000000000003"));
}

TEST_F(CheckpointClusterTest, ACrashedNodesRankRestoresFromItsReplica) {
  save_all(1, true);
  save_all(2, false);
  stores_[1]->stop();  // node-2: rank 1's node, and rank 0's replica
  std::vector<uint8_t> w;
  auto info = restore(1, w);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->step, 2);
  EXPECT_EQ(info->tiers, std::vector<std::string>{"cluster peer node-3"});
  EXPECT_EQ(w, pattern(21, 300000));
  // Rank 0 still reads its own node's copy.
  info = restore(0, w);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->tiers, std::vector<std::string>{"cluster own node node-1"});
  EXPECT_EQ(w, pattern(20, 300000));
}

TEST_F(CheckpointClusterTest, WithBothCopiesGoneARankFallsBackToTheDiskAndSaysSo) {
  save_all(1, true);
  save_all(2, false);
  stores_[1]->stop();
  stores_[2]->stop();  // rank 1's node and its replica: two adjacent nodes
  std::vector<uint8_t> w;
  auto info = restore(1, w);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->step, 1);
  EXPECT_EQ(info->tiers, std::vector<std::string>{"shared"});
  EXPECT_EQ(w, pattern(11, 300000));
}

TEST_F(CheckpointClusterTest, BadOptionsAreRefusedWithNothingMade) {
  Options o = options(0);
  o.dir = shared_.path() / "never";
  o.cluster_rank_nodes = {"node-1"};
  auto c = Checkpointer::open(o);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("cluster_rank_nodes"), std::string::npos);
  o = options(0);
  o.dir = shared_.path() / "never";
  o.cluster_rank_nodes = {"node-1", "node-2", "node-9"};
  c = Checkpointer::open(o);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("node-9"), std::string::npos);
  o = options(0);
  o.dir = shared_.path() / "never";
  o.cluster_config_dir = shared_.path() / "nowhere";
  c = Checkpointer::open(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, "TierOff");
  EXPECT_FALSE(std::filesystem::exists(shared_.path() / "never"));
}

}  // namespace
}  // namespace endure::ckpt
