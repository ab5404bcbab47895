// The cluster memory tier over real stores on loopback, three nodes, a rank on each: saves
// reach the rank's node and its replica, a step commits only with every copy whole, and a
// restore reads the nearest copy that verifies, passing over a stopped store and a
// damaged copy, and says so.
#include "train/ckpt/cluster_tier.h"

#include <gtest/gtest.h>

#include "memstore/data_server.h"
#include "memstore/server.h"
#include "support/temp_dir.h"

namespace endure::ckpt {
namespace {

struct Node {
  test::TempDir dir{"endure-tier-node"};
  std::unique_ptr<memstore::Arena> arena;
  std::unique_ptr<memstore::StoreServer> http;
  std::unique_ptr<memstore::DataServer> data;
  int port = 0;
  bool start(uint64_t capacity) {
    arena = std::move(*memstore::Arena::open(dir.path(), capacity));
    for (int attempt = 0; attempt < 20; ++attempt) {
      http = std::make_unique<memstore::StoreServer>(*arena, "tok");
      if (!http->start("127.0.0.1", 0)) continue;
      data = std::make_unique<memstore::DataServer>(*arena, "tok");
      if (data->start("127.0.0.1", http->port() + 1)) return port = http->port(), true;
    }
    return false;
  }
  void stop() {
    data->stop();
    http->stop();
  }
};

class ClusterTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      nodes_.push_back(std::make_unique<Node>());
      ASSERT_TRUE(nodes_.back()->start(16u << 20));
      std::string name = "node-" + std::to_string(i + 1);
      config_.nodes.push_back({name, "workers", ""});
      config_.stores[name] = {name, "127.0.0.1", nodes_.back()->port};
    }
    config_.token = "tok";
  }
  ClusterTier tier(int rank) {
    return ClusterTier({config_, "run-1", rank, 3, {"node-1", "node-2", "node-3"}, 1, 5});
  }
  static std::vector<uint8_t> shard_of(int rank, int64_t step) {
    return std::vector<uint8_t>(3u << 20, static_cast<uint8_t>(rank * 16 + step));
  }
  // Each rank's save of a step, then rank 0's commit.
  void save_step(int64_t step) {
    for (int r = 0; r < 3; ++r) {
      auto bytes = shard_of(r, step);
      auto held = tier(r).save(step, bytes.data(), bytes.size(), "{\"rank\":" + std::to_string(r) + "}");
      ASSERT_TRUE(held) << held.error().message;
      EXPECT_EQ(held->size(), 2u);
    }
    auto committed = tier(0).commit(
        step,
        [&](const std::vector<std::string>& descriptors) -> Result<std::string> {
          EXPECT_EQ(descriptors.size(), 3u);
          for (int r = 0; r < 3 && r < static_cast<int>(descriptors.size()); ++r)
            EXPECT_EQ(descriptors[r], "{\"rank\":" + std::to_string(r) + "}");
          return "{\"step\":" + std::to_string(step) + "}";
        },
        5);
    ASSERT_TRUE(committed) << committed.error().message;
    EXPECT_EQ(committed->size(), 3u);
  }
  std::vector<std::unique_ptr<Node>> nodes_;
  ClusterTierConfig config_;
};

Status same_as(const std::vector<uint8_t>& want, const void* data, size_t size) {
  if (size == want.size() && std::memcmp(data, want.data(), size) == 0) return Status::Ok();
  return make_error("ChecksumMismatch", "the copy differs");
}

TEST_F(ClusterTierTest, ARanksCopiesGoToItsNodeAndItsSuccessor) {
  EXPECT_EQ(tier(0).holders(0), (std::vector<std::string>{"node-1", "node-2"}));
  EXPECT_EQ(tier(0).holders(2), (std::vector<std::string>{"node-3", "node-1"}));
  save_step(1);
  auto newest = tier(1).newest_committed();
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->first, 1);
  EXPECT_EQ(newest->second, "{\"step\":1}");
}

TEST_F(ClusterTierTest, ARestoreReadsItsOwnNodeFirst) {
  save_step(1);
  auto want = shard_of(1, 1);
  std::vector<uint8_t> back(want.size());
  auto got = tier(1).read_shard(1, 1, back.data(), back.size(),
                                [&](const void* d, size_t n) { return same_as(want, d, n); });
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->from, (Candidate{Source::own_store, "node-2"}));
  EXPECT_TRUE(got->missed.empty());
  EXPECT_EQ(back, want);
}

TEST_F(ClusterTierTest, ACrashedNodesRankReadsItsReplica) {
  save_step(1);
  nodes_[1]->stop();  // node-2, where rank 1 ran
  auto want = shard_of(1, 1);
  std::vector<uint8_t> back(want.size());
  auto got = tier(1).read_shard(1, 1, back.data(), back.size(),
                                [&](const void* d, size_t n) { return same_as(want, d, n); });
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->from, (Candidate{Source::peer_store, "node-3"}));
  ASSERT_EQ(got->missed.size(), 1u);
  EXPECT_EQ(got->missed[0].error.code, "StoreUnreachable");
  EXPECT_EQ(back, want);
  // The manifest is still found, on the stores left.
  auto newest = tier(1).newest_committed();
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->first, 1);
}

TEST_F(ClusterTierTest, ADamagedCopyIsPassedOverAndSaidSo) {
  save_step(1);
  auto want = shard_of(2, 1);
  std::vector<uint8_t> back(want.size());
  int reads = 0;
  auto got = tier(2).read_shard(1, 2, back.data(), back.size(), [&](const void* d, size_t n) -> Status {
    if (++reads == 1) return make_error("ChecksumMismatch", "chunk 0 of node-3's copy differs");
    return same_as(want, d, n);
  });
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->from, (Candidate{Source::peer_store, "node-1"}));
  ASSERT_EQ(got->missed.size(), 1u);
  EXPECT_EQ(got->missed[0].error.code, "ChecksumMismatch");
  EXPECT_EQ(back, want);
}

TEST_F(ClusterTierTest, TwoAdjacentNodesDownLeaveNoCopyOfTheirRank) {
  save_step(1);
  nodes_[0]->stop();
  nodes_[1]->stop();  // rank 0's node and its replica
  std::vector<uint8_t> back(3u << 20);
  auto got = tier(0).read_shard(1, 0, back.data(), back.size(), [](const void*, size_t) { return Status::Ok(); });
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, "NoCopy");
  EXPECT_NE(got.error().message.find("node-1"), std::string::npos);
  EXPECT_NE(got.error().message.find("node-2"), std::string::npos);
}

TEST_F(ClusterTierTest, AStepWithACopyMissingIsNeverCommitted) {
  save_step(1);
  // Rank 2's replica store (node-1) is down for step 2: its copy is not whole.
  nodes_[0]->stop();
  for (int r = 1; r < 3; ++r) {
    auto bytes = shard_of(r, 2);
    (void)tier(r).save(2, bytes.data(), bytes.size(), "{}");
  }
  auto committed = tier(1).commit(2, [](const auto&) -> Result<std::string> { return std::string("{}"); }, 0.3);
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().code, "CommitTimeout");
  auto newest = tier(1).newest_committed();
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->first, 1);
  EXPECT_EQ(tier(1).committed_steps(), std::vector<int64_t>{1});
  EXPECT_FALSE(tier(1).manifest(2));
}

TEST_F(ClusterTierTest, AFullStoreRefusesTheSaveAndTheRankSaysWhy) {
  auto big = std::vector<uint8_t>(20u << 20, 1);  // more than a 16 MiB store
  auto held = tier(0).save(1, big.data(), big.size(), "{}");
  ASSERT_FALSE(held);
  EXPECT_EQ(held.error().code, "NoCopy");
  EXPECT_NE(held.error().message.find("does not fit"), std::string::npos);
}

}  // namespace
}  // namespace endure::ckpt
