// flush() in a process that saved nothing: a run resumed from a step that only the
// node-local tiers hold, with nothing left to train, must still end with that step in the
// shared folder, where another node finds it.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "endure/checkpoint.h"
#include "support/checkpoint_support.h"
#include "support/temp_dir.h"
#include "support/text_files.h"
#include "train/ckpt/format.h"

namespace endure::ckpt {
namespace {

constexpr size_t kSize = 3u << 20;

bool on_shared(const std::filesystem::path& dir, int64_t step) {
  return std::filesystem::exists(step_dir(dir, step) / kManifestName);
}

// One run's saves: step 1 to every tier, 2 and 3 to the memory tier alone, as while the
// disk is behind; the process then ends (killed) without flushing. The memory tier keeps
// step 1's slot (the newest on disk) and puts 3 where 2 was.
void save_one_durable_two_in_memory(const Options& o) {
  auto c = open_ok(o);
  for (int64_t step = 1; step <= 3; ++step) {
    const auto state = pattern(step * 10 + o.rank, kSize);
    ASSERT_TRUE(c->save(step, {{"state", state.data(), state.size()}}, {{"step", step}},
                        step == 1 ? Tiers::all : Tiers::memory)
                    .ok());
    ASSERT_TRUE(c->wait().ok());
  }
}

TEST(CheckpointFlushRestored, TheNewestMemoryOnlyStepReachesTheSharedFolder) {
  test::TempDir dir;
  Options o{.dir = dir.path() / "shared", .keep_last = 0, .memory_dir = dir.path() / "shm"};
  save_one_durable_two_in_memory(o);
  ASSERT_FALSE(on_shared(o.dir, 3));

  auto resumed = open_ok(o);
  auto latest = resumed->latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 3);
  EXPECT_EQ(latest->tiers, std::vector<std::string>{"memory"});
  ASSERT_TRUE(resumed->flush().ok());
  EXPECT_TRUE(on_shared(o.dir, 3));
  EXPECT_TRUE(verify_checkpoint(step_dir(o.dir, 3)).ok());
  EXPECT_EQ(test::read_text(step_dir(o.dir, 3) / descriptor_name(0)),
            test::read_text(latest->tier_paths.front() / descriptor_name(0)))
      << "the descriptor is copied as it was";
  EXPECT_FALSE(on_shared(o.dir, 2)) << "only the newest step is copied";
  EXPECT_EQ(resumed->latest()->tiers, (std::vector<std::string>{"memory", "shared"}));
  auto loaded = open_ok({.dir = o.dir})->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->step, 3);
  EXPECT_EQ(loaded->user, json({{"step", 3}}));
  EXPECT_EQ(loaded->buffers.at("state"), pattern(30, kSize));
  // Once the shared folder holds the newest step, a flush writes nothing.
  const auto written = std::filesystem::last_write_time(step_dir(o.dir, 3) / kManifestName);
  ASSERT_TRUE(open_ok(o)->flush().ok());
  EXPECT_EQ(std::filesystem::last_write_time(step_dir(o.dir, 3) / kManifestName), written);
}

// Two ranks of one node, each flushing its own shard: rank 0 commits once both are there.
TEST(CheckpointFlushRestored, EveryRankCopiesItsShardAndRankZeroCommits) {
  test::TempDir dir;
  auto options = [&](int r) {
    return Options{
        .dir = dir.path() / "shared", .rank = r, .world = 2, .memory_dir = dir.path() / "shm"};
  };
  std::thread saving(save_one_durable_two_in_memory, options(1));
  save_one_durable_two_in_memory(options(0));
  saving.join();
  ASSERT_FALSE(on_shared(dir.path() / "shared", 3));

  Status flushed1;
  std::thread flushing([&] { flushed1 = open_ok(options(1))->flush(); });
  Status flushed0 = open_ok(options(0))->flush();
  flushing.join();
  ASSERT_TRUE(flushed0.ok()) << flushed0.error().message;
  ASSERT_TRUE(flushed1.ok()) << flushed1.error().message;
  EXPECT_TRUE(verify_checkpoint(step_dir(dir.path() / "shared", 3)).ok());
  for (int r = 0; r < 2; ++r) {
    auto loaded = open_ok({.dir = dir.path() / "shared", .rank = r, .world = 2})->load();
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->step, 3);
    EXPECT_EQ(loaded->buffers.at("state"), pattern(30 + r, kSize)) << "rank " << r;
  }
}

// A memory copy whose bytes no longer match its checksums never reaches the shared folder:
// the newest step that verifies goes instead (here step 1, which the shared folder lost and
// the node-local tiers still hold).
TEST(CheckpointFlushRestored, ACopyThatFailsItsChecksumsIsSkippedForTheNextOlder) {
  test::TempDir dir;
  Options o{.dir = dir.path() / "shared",
            .keep_last = 0,
            .memory_dir = dir.path() / "shm",
            .local_dir = dir.path() / "local"};
  save_one_durable_two_in_memory(o);
  std::filesystem::remove_all(step_dir(o.dir, 1));
  auto latest = open_ok(o)->latest();
  ASSERT_TRUE(latest.has_value());
  ASSERT_EQ(latest->step, 3);
  {
    std::fstream shard(latest->tier_paths.front() / shard_name(0),
                       std::ios::in | std::ios::out | std::ios::binary);
    shard.seekp(kSize / 2);
    shard.put('\x5a' ^ static_cast<char>(pattern(30, kSize)[kSize / 2 - kShardHeaderBytes]));
  }
  ASSERT_TRUE(open_ok(o)->flush().ok());
  EXPECT_FALSE(std::filesystem::exists(step_dir(o.dir, 3)))
      << "the copy that failed is removed with its folder";
  EXPECT_TRUE(verify_checkpoint(step_dir(o.dir, 1)).ok());
  auto loaded = open_ok({.dir = o.dir})->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->step, 1);
  EXPECT_EQ(loaded->buffers.at("state"), pattern(10, kSize));
}

}  // namespace
}  // namespace endure::ckpt
