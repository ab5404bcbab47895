// A memory store served on loopback, its HTTP front and its data path, reached with the
// training side's client (train/ckpt/cluster_store.h): objects round-trip byte for byte, a
// stranger's token gets nothing and changes nothing, a full store says so and the client
// goes on, a store restarted between calls is reconnected to, a stopped one is unreachable.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <numeric>

#include "common/framed_socket.h"
#include "memstore/data_server.h"
#include "memstore/server.h"
#include "support/temp_dir.h"
#include "train/ckpt/cluster_store.h"

namespace endure::memstore {
namespace {

using ckpt::ClusterStoreClient;
using ckpt::StoreAddress;

class StoreServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto arena = Arena::open(dir_.path(), 64u << 20);
    ASSERT_TRUE(arena);
    arena_ = std::move(*arena);
    // The HTTP front on a free port and the data path on the next, as endure-memstore
    // listens; another free port is tried while the next one is taken.
    for (int attempt = 0; attempt < 20 && !data_; ++attempt) {
      server_ = std::make_unique<StoreServer>(*arena_, "cluster-secret");
      ASSERT_TRUE(server_->start("127.0.0.1", 0));
      auto data = std::make_unique<DataServer>(*arena_, "cluster-secret");
      if (data->start("127.0.0.1", server_->port() + 1)) data_ = std::move(data);
    }
    ASSERT_TRUE(data_);
    at_ = {"node-1", "127.0.0.1", server_->port()};
  }
  test::TempDir dir_{"endure-store-server-test"};
  std::unique_ptr<Arena> arena_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<DataServer> data_;
  StoreAddress at_;
};

std::vector<uint8_t> pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 12));
  return bytes;
}

TEST_F(StoreServerTest, AShardRoundTripsByteForByte) {
  ClusterStoreClient client("cluster-secret");
  auto shard = pattern((9u << 20) + 17, 7);  // more than the client's 4 MiB window
  ASSERT_TRUE(client.put(at_, "run-1", 3, "rank-00002.shard", shard.data(), shard.size()));
  std::vector<uint8_t> back(shard.size());
  ASSERT_TRUE(client.get_into(at_, "run-1", 3, "rank-00002.shard", back.data(), back.size()));
  EXPECT_EQ(back, shard);
  auto text = client.get(at_, "run-1", 3, "rank-00002.shard");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->size(), shard.size());
  // A wrong size is an error, never a short or overrun read.
  std::vector<uint8_t> small(shard.size() - 1);
  auto wrong = client.get_into(at_, "run-1", 3, "rank-00002.shard", small.data(), small.size());
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, "ShardSize");
}

TEST_F(StoreServerTest, ListingSaysWhichStepsAreComplete) {
  ClusterStoreClient client("cluster-secret");
  std::string desc = R"({"rank":0})", manifest = R"({"step":4})";
  ASSERT_TRUE(client.put(at_, "run-1", 4, "rank-00000.json", desc.data(), desc.size()));
  ASSERT_TRUE(client.put(at_, "run-1", 4, "MANIFEST.json", manifest.data(), manifest.size()));
  ASSERT_TRUE(client.put(at_, "run-1", 5, "rank-00000.json", desc.data(), desc.size()));
  auto steps = client.steps(at_, "run-1");
  ASSERT_TRUE(steps);
  ASSERT_EQ((*steps)["Steps"].size(), 2u);
  EXPECT_EQ((*steps)["Steps"][0]["Step"], 4);
  EXPECT_EQ((*steps)["Steps"][0]["Complete"], true);
  EXPECT_EQ((*steps)["Steps"][1]["Complete"], false);
  EXPECT_EQ((*steps)["Steps"][0]["Objects"].size(), 2u);
  ASSERT_TRUE(client.remove(at_, "run-1", 5));
  EXPECT_EQ((*client.steps(at_, "run-1"))["Steps"].size(), 1u);
  ASSERT_TRUE(client.remove(at_, "run-1"));
  EXPECT_EQ((*client.steps(at_, "run-1"))["Steps"].size(), 0u);
}

TEST_F(StoreServerTest, AStrangersTokenGetsNothingAndChangesNothing) {
  ClusterStoreClient owner("cluster-secret"), stranger("another-cluster");
  std::string bytes = "weights";
  ASSERT_TRUE(owner.put(at_, "run-1", 1, "rank-00000.shard", bytes.data(), bytes.size()));
  auto got = stranger.get(at_, "run-1", 1, "rank-00000.shard");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, "Unauthorized");
  auto put = stranger.put(at_, "run-1", 1, "rank-00000.shard", "evil", 4);
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code, "Unauthorized");
  EXPECT_FALSE(stranger.remove(at_, "run-1"));
  EXPECT_FALSE(stranger.steps(at_, "run-1"));
  EXPECT_FALSE(stranger.stats(at_));
  EXPECT_EQ(*owner.get(at_, "run-1", 1, "rank-00000.shard"), bytes);
}

TEST_F(StoreServerTest, MissingObjectsAndBadNames) {
  ClusterStoreClient client("cluster-secret");
  auto missing = client.get(at_, "run-1", 1, "rank-00000.shard");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "ResourceNotFound");
  std::vector<uint8_t> into(4);
  auto missing_into =
      client.get_into(at_, "run-1", 1, "rank-00000.shard", into.data(), into.size());
  ASSERT_FALSE(missing_into);
  EXPECT_EQ(missing_into.error().code, "ResourceNotFound");
  auto bad = client.put(at_, "run-1", 1, "notes.txt", "x", 1);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "ValidationException");
  EXPECT_NE(bad.error().message.find("object:"), std::string::npos);
}

TEST_F(StoreServerTest, AFullStoreRefusesAndStatsCountIt) {
  ClusterStoreClient client("cluster-secret");
  auto big = pattern(40u << 20, 1);
  ASSERT_TRUE(client.put(at_, "run-1", 1, "rank-00000.shard", big.data(), big.size()));
  // Step 1 has no manifest: nothing may go, and 40 MiB more does not fit in 64.
  auto refused = client.put(at_, "run-1", 2, "rank-00000.shard", big.data(), big.size());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "InsufficientStorage");
  // The client goes on after a refusal (the store closed that connection).
  std::string manifest = "{}";
  ASSERT_TRUE(client.put(at_, "run-1", 1, "MANIFEST.json", manifest.data(), manifest.size()));
  auto stats = client.stats(at_);
  ASSERT_TRUE(stats);
  EXPECT_EQ((*stats)["RefusedPuts"], 1);
  EXPECT_EQ((*stats)["CapacityBytes"], 64u << 20);
  EXPECT_EQ((*stats)["UsedBytes"], big.size() + 2);
}

TEST_F(StoreServerTest, ShardGetsCountShardsServedOnEitherPath) {
  ClusterStoreClient client("cluster-secret");
  std::string shard = "weights", desc = R"({"rank":0})", manifest = R"({"step":1})";
  ASSERT_TRUE(client.put(at_, "run-1", 1, "rank-00000.shard", shard.data(), shard.size()));
  ASSERT_TRUE(client.put(at_, "run-1", 1, "rank-00000.json", desc.data(), desc.size()));
  ASSERT_TRUE(client.put(at_, "run-1", 1, "MANIFEST.json", manifest.data(), manifest.size()));
  // The data path (sendfile).
  for (const char* object : {"rank-00000.shard", "rank-00000.json", "MANIFEST.json"})
    ASSERT_TRUE(client.get(at_, "run-1", 1, object));
  // The HTTP front.
  httplib::Client http("127.0.0.1", server_->port());
  http.set_bearer_token_auth("cluster-secret");
  for (const char* object : {"rank-00000.shard", "MANIFEST.json"}) {
    auto r = http.Get(std::string("/v1/runs/run-1/steps/1/") + object);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  auto stats = client.stats(at_);
  ASSERT_TRUE(stats);
  EXPECT_EQ((*stats)["ShardGets"], 2);
  EXPECT_EQ((*stats)["Gets"], 5);
  EXPECT_EQ((*stats)["GetBytes"], 2 * shard.size() + desc.size() + 2 * manifest.size());
  EXPECT_EQ((*stats)["ReplicationLagSeconds"], 0);
  EXPECT_TRUE((*stats)["LastCommitSeconds"].is_number());
}

TEST_F(StoreServerTest, AStoreRestartedBetweenCallsIsReconnectedTo) {
  ClusterStoreClient client("cluster-secret");
  std::string bytes = "step one";
  ASSERT_TRUE(client.put(at_, "run-1", 1, "rank-00000.shard", bytes.data(), bytes.size()));
  data_->stop();
  data_ = std::make_unique<DataServer>(*arena_, "cluster-secret");
  ASSERT_TRUE(data_->start("127.0.0.1", server_->port() + 1));
  auto got = client.get(at_, "run-1", 1, "rank-00000.shard");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, bytes);
}

TEST_F(StoreServerTest, AStrangerOnTheDataPathLearnsNothing) {
  auto fd = net::connect_tcp("127.0.0.1", server_->port() + 1, 5);
  ASSERT_TRUE(fd);
  ASSERT_TRUE(net::send_frame(*fd, {{"Op", "Get"},
                                    {"Token", "guess"},
                                    {"Run", "run-1"},
                                    {"Step", 1},
                                    {"Object", "rank-00000.shard"}}));
  auto reply = net::recv_frame(*fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["Ok"], false);
  EXPECT_EQ((*reply)["__type"], "Unauthorized");
  char byte;
  EXPECT_EQ(::recv(*fd, &byte, 1, 0), 0);  // and the store hung up
  ::close(*fd);
}

TEST_F(StoreServerTest, AStoppedStoreIsUnreachable) {
  data_->stop();
  server_->stop();
  ClusterStoreClient client("cluster-secret", 2);
  auto got = client.get(at_, "run-1", 1, "rank-00000.shard");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, "StoreUnreachable");
  EXPECT_NE(got.error().message.find("node-1"), std::string::npos);
}

}  // namespace
}  // namespace endure::memstore
