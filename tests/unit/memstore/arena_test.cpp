// A memory store's arena on a real folder: objects appear only whole, room is reserved and
// given back, eviction keeps what must stay, and a store restarted after a kill forgets
// every half-written object.
#include "memstore/arena.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "support/temp_dir.h"

namespace endure::memstore {
namespace {

Status put(Arena& arena, const std::string& run, int64_t step, const std::string& object,
           size_t size) {
  auto p = arena.begin_put(run, step, object, size);
  if (!p) return p.error();
  std::string bytes(size, 'x');
  if (auto w = (*p)->write(bytes.data(), bytes.size()); !w) return w;
  return (*p)->commit();
}

class ArenaTest : public ::testing::Test {
 protected:
  test::TempDir dir_{"endure-arena-test"};
};

TEST_F(ArenaTest, AnObjectAppearsOnlyOnceWhole) {
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  auto p = (*arena)->begin_put("run-1", 5, "rank-00000.shard", 100);
  ASSERT_TRUE(p);
  ASSERT_TRUE((*p)->write(std::string(60, 'a').data(), 60));
  EXPECT_FALSE((*arena)->open_object("run-1", 5, "rank-00000.shard"));
  EXPECT_EQ((*arena)->stats().used_bytes, 100u);  // reserved
  auto early = (*p)->commit();
  ASSERT_FALSE(early);  // 60 of 100 bytes
  ASSERT_TRUE((*p)->write(std::string(40, 'b').data(), 40));
  ASSERT_TRUE((*p)->commit());
  auto path = (*arena)->open_object("run-1", 5, "rank-00000.shard");
  ASSERT_TRUE(path);
  EXPECT_EQ((*path)->size(), 100u);
  EXPECT_EQ((*arena)->stats().used_bytes, 100u);
  EXPECT_EQ((*arena)->stats().objects, 1u);
}

TEST_F(ArenaTest, AnAbandonedWriteGivesItsRoomBackAndLeavesNothing) {
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  {
    auto p = (*arena)->begin_put("run-1", 1, "rank-00000.shard", 300);
    ASSERT_TRUE(p);
    ASSERT_TRUE((*p)->write("abc", 3));
  }
  EXPECT_EQ((*arena)->stats().used_bytes, 0u);
  EXPECT_TRUE((*arena)->list("run-1").empty() || (*arena)->list("run-1")[0].objects.empty());
  auto more = (*arena)->begin_put("run-1", 1, "rank-00000.shard", 10);
  ASSERT_TRUE(more);
  EXPECT_FALSE((*more)->write(std::string(11, 'x').data(), 11));  // past the announced size
}

TEST_F(ArenaTest, FullStoreEvictsOldStepsAndRefusesWhatCannotFit) {
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  for (int s = 1; s <= 3; ++s) {
    ASSERT_TRUE(put(**arena, "run-1", s, "rank-00000.shard", 300));
    ASSERT_TRUE(put(**arena, "run-1", s, "MANIFEST.json", 10));
  }
  EXPECT_EQ((*arena)->stats().used_bytes, 930u);
  // Step 4 needs room: step 1 goes, 2 and 3 stay.
  ASSERT_TRUE(put(**arena, "run-1", 4, "rank-00000.shard", 300));
  auto steps = (*arena)->list("run-1");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].step.step, 2);
  EXPECT_EQ((*arena)->stats().evicted_steps, 1u);
  // Step 4 is not complete and step 3 is the newest complete one: step 2 may go, 3 and 4
  // never; 700 bytes cannot be found.
  auto refused = (*arena)->begin_put("run-1", 4, "rank-00001.shard", 700);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "InsufficientStorage");
  EXPECT_EQ((*arena)->stats().refused_puts, 1u);
  EXPECT_LE((*arena)->stats().used_bytes, 1000u);
  EXPECT_TRUE((*arena)->open_object("run-1", 3, "rank-00000.shard"));
}

TEST_F(ArenaTest, AnEvictedShardsPagesTakeTheNextShard) {
  const uint64_t mib = 1u << 20;
  auto arena = Arena::open(dir_.path(), 10 * mib);
  ASSERT_TRUE(arena);
  for (int s = 1; s <= 3; ++s) {
    ASSERT_TRUE(put(**arena, "run-1", s, "rank-00000.shard", 3 * mib));
    ASSERT_TRUE(put(**arena, "run-1", s, "MANIFEST.json", 10));
  }
  // Step 4 evicts step 1, whose shard's pages step 4's shard is written into.
  ASSERT_TRUE(put(**arena, "run-1", 4, "rank-00000.shard", 3 * mib));
  auto st = (*arena)->stats();
  EXPECT_EQ(st.evicted_steps, 1u);
  EXPECT_EQ(st.pool_bytes, 0u);
  EXPECT_EQ(st.used_bytes, 9 * mib + 20);
  // A smaller shard takes a bigger file, its tail given back.
  ASSERT_TRUE(put(**arena, "run-1", 4, "MANIFEST.json", 10));
  ASSERT_TRUE(put(**arena, "run-1", 5, "rank-00000.shard", 2 * mib));
  st = (*arena)->stats();
  EXPECT_EQ(st.pool_bytes, 0u);
  EXPECT_EQ(st.used_bytes, 8 * mib + 20);
  auto reading = (*arena)->open_object("run-1", 5, "rank-00000.shard");
  ASSERT_TRUE(reading);
  EXPECT_EQ((*reading)->size(), 2 * mib);
}

TEST_F(ArenaTest, AShardBeingReadIsNeverWrittenOver) {
  const uint64_t mib = 1u << 20;
  auto arena = Arena::open(dir_.path(), 7 * mib);
  ASSERT_TRUE(arena);
  auto put_byte = [&](int64_t step, char byte) {
    auto p = (*arena)->begin_put("run-1", step, "rank-00000.shard", 3 * mib);
    ASSERT_TRUE(p);
    std::string bytes(3 * mib, byte);
    ASSERT_TRUE((*p)->write(bytes.data(), bytes.size()));
    ASSERT_TRUE((*p)->commit());
    ASSERT_TRUE(put(**arena, "run-1", step, "MANIFEST.json", 1));
  };
  put_byte(1, 'a');
  put_byte(2, 'b');
  auto reading = (*arena)->open_object("run-1", 1, "rank-00000.shard");
  ASSERT_TRUE(reading);
  put_byte(3, 'c');  // evicts step 1 while it is read: its file is unlinked, not reused
  EXPECT_FALSE((*arena)->open_object("run-1", 1, "rank-00000.shard"));
  std::string back(3 * mib, '\0');
  ASSERT_EQ(::pread((*reading)->fd(), back.data(), back.size(), 0),
            static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, std::string(3 * mib, 'a'));
}

TEST_F(ArenaTest, ReplacingAnObjectCountsItOnce) {
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  ASSERT_TRUE(put(**arena, "run-1", 1, "rank-00000.json", 100));
  ASSERT_TRUE(put(**arena, "run-1", 1, "rank-00000.json", 120));
  EXPECT_EQ((*arena)->stats().used_bytes, 120u);
}

TEST_F(ArenaTest, ARestartDropsHalfWrittenObjectsAndKeepsWholeOnes) {
  {
    auto arena = Arena::open(dir_.path(), 1000);
    ASSERT_TRUE(arena);
    ASSERT_TRUE(put(**arena, "run-1", 7, "rank-00000.shard", 200));
    ASSERT_TRUE(put(**arena, "run-1", 7, "MANIFEST.json", 20));
  }
  // What a store killed in the middle of a write leaves: a part file.
  std::filesystem::create_directories(dir_.path() / "run-1" / "step-000000000008");
  std::ofstream(dir_.path() / "run-1" / "step-000000000008" / ".rank-00000.shard.part-00ff")
      << "half";
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  EXPECT_TRUE((*arena)->open_object("run-1", 7, "rank-00000.shard"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "run-1" / "step-000000000008" /
                                       ".rank-00000.shard.part-00ff"));
  EXPECT_EQ((*arena)->stats().used_bytes, 220u);
  auto steps = (*arena)->list("run-1");
  ASSERT_GE(steps.size(), 1u);
  EXPECT_TRUE(steps[0].step.complete);
}

TEST_F(ArenaTest, ASmallerShareOnRestartEvictsDownToIt) {
  {
    auto arena = Arena::open(dir_.path(), 1000);
    ASSERT_TRUE(arena);
    for (int s = 1; s <= 3; ++s) {
      ASSERT_TRUE(put(**arena, "run-1", s, "rank-00000.shard", 250));
      ASSERT_TRUE(put(**arena, "run-1", s, "MANIFEST.json", 10));
    }
  }
  auto arena = Arena::open(dir_.path(), 300);
  ASSERT_TRUE(arena);
  EXPECT_LE((*arena)->stats().used_bytes, 300u);
  EXPECT_TRUE((*arena)->open_object("run-1", 3, "rank-00000.shard"));
}

TEST_F(ArenaTest, BadNamesAreRefusedNamingTheRule) {
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  for (const std::string& run :
       std::vector<std::string>{"", "../x", ".hidden", "a/b", std::string(129, 'r')}) {
    auto p = (*arena)->begin_put(run, 1, "MANIFEST.json", 1);
    ASSERT_FALSE(p) << run;
    EXPECT_EQ(p.error().code, "ValidationException");
    EXPECT_NE(p.error().message.find("run:"), std::string::npos);
  }
  for (std::string object :
       {"", "rank-1.shard", "rank-0000x.shard", "../MANIFEST.json", "notes.txt"}) {
    auto p = (*arena)->begin_put("run-1", 1, object, 1);
    ASSERT_FALSE(p) << object;
    EXPECT_NE(p.error().message.find("object:"), std::string::npos);
  }
  EXPECT_FALSE((*arena)->begin_put("run-1", -1, "MANIFEST.json", 1));
  EXPECT_EQ((*arena)->stats().used_bytes, 0u);
}

TEST_F(ArenaTest, ASaveWaitingForItsManifestIsLagAndItsCommitTimeIsKept) {
  using namespace std::chrono_literals;
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  EXPECT_EQ((*arena)->stats().replication_lag_seconds, 0);
  EXPECT_EQ((*arena)->stats().last_commit_seconds, 0);
  ASSERT_TRUE(put(**arena, "run-1", 1, "rank-00000.shard", 100));
  std::this_thread::sleep_for(20ms);
  EXPECT_GE((*arena)->stats().replication_lag_seconds, 0.02);
  ASSERT_TRUE(put(**arena, "run-1", 1, "MANIFEST.json", 10));
  auto st = (*arena)->stats();
  EXPECT_EQ(st.replication_lag_seconds, 0);
  EXPECT_GE(st.last_commit_seconds, 0.02);
  // Another run's save waiting counts; the longest wait over runs is the lag.
  ASSERT_TRUE(put(**arena, "run-2", 1, "rank-00000.json", 10));
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(put(**arena, "run-1", 2, "rank-00000.shard", 100));
  double lag = (*arena)->stats().replication_lag_seconds;
  EXPECT_GE(lag, 0.02);
  ASSERT_TRUE(put(**arena, "run-2", 1, "MANIFEST.json", 10));
  EXPECT_GE((*arena)->stats().last_commit_seconds, lag);
  EXPECT_GT((*arena)->stats().replication_lag_seconds, 0);  // run-1 step 2 still waits
  // A step given up (a newer one completed) is no lag; a manifest put again changes nothing.
  ASSERT_TRUE(put(**arena, "run-1", 3, "MANIFEST.json", 10));
  double commit = (*arena)->stats().last_commit_seconds;
  EXPECT_EQ((*arena)->stats().replication_lag_seconds, 0);
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(put(**arena, "run-1", 3, "MANIFEST.json", 10));
  EXPECT_EQ((*arena)->stats().last_commit_seconds, commit);
  // Removing a waiting step ends its lag.
  ASSERT_TRUE(put(**arena, "run-1", 4, "rank-00000.shard", 100));
  EXPECT_GT((*arena)->stats().replication_lag_seconds, 0);
  ASSERT_TRUE((*arena)->remove("run-1", 4));
  EXPECT_EQ((*arena)->stats().replication_lag_seconds, 0);
}

TEST_F(ArenaTest, ARestartedStoreCountsAHeldUnfinishedSaveAsLagFromItsStart) {
  using namespace std::chrono_literals;
  {
    auto arena = Arena::open(dir_.path(), 1000);
    ASSERT_TRUE(arena);
    ASSERT_TRUE(put(**arena, "run-1", 1, "rank-00000.shard", 100));
    ASSERT_TRUE(put(**arena, "run-1", 1, "MANIFEST.json", 10));
    ASSERT_TRUE(put(**arena, "run-1", 2, "rank-00000.shard", 100));
  }
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  std::this_thread::sleep_for(20ms);
  EXPECT_GE((*arena)->stats().replication_lag_seconds, 0.02);
  ASSERT_TRUE(put(**arena, "run-1", 2, "MANIFEST.json", 10));
  EXPECT_EQ((*arena)->stats().replication_lag_seconds, 0);
  EXPECT_GE((*arena)->stats().last_commit_seconds, 0.02);
}

TEST_F(ArenaTest, ShardGetsCountShardsOnly) {
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  (*arena)->count_get("rank-00000.shard", 100);
  (*arena)->count_get("rank-00000.json", 10);
  (*arena)->count_get("MANIFEST.json", 5);
  auto st = (*arena)->stats();
  EXPECT_EQ(st.shard_gets, 1u);
  EXPECT_EQ(st.gets, 3u);
  EXPECT_EQ(st.get_bytes, 115u);
}

TEST_F(ArenaTest, RemovingARunOrAStep) {
  auto arena = Arena::open(dir_.path(), 1000);
  ASSERT_TRUE(arena);
  ASSERT_TRUE(put(**arena, "run-1", 1, "rank-00000.shard", 100));
  ASSERT_TRUE(put(**arena, "run-1", 2, "rank-00000.shard", 100));
  ASSERT_TRUE(put(**arena, "run-2", 1, "rank-00000.shard", 100));
  ASSERT_TRUE((*arena)->remove("run-1", 1));
  EXPECT_EQ((*arena)->list("run-1").size(), 1u);
  ASSERT_TRUE((*arena)->remove("run-1"));
  EXPECT_TRUE((*arena)->list("run-1").empty());
  EXPECT_EQ((*arena)->stats().used_bytes, 100u);
  EXPECT_EQ((*arena)->stats().evicted_steps, 0u);
}

}  // namespace
}  // namespace endure::memstore
