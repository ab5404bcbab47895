// Saves that outrun the disk: a save to the memory tier alone, flush() writing the newest
// one to the disk tiers, disk_busy(), and the overlapped copy with its checksums taken on
// the way, shared between threads.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "endure/checkpoint.h"
#include "support/checkpoint_support.h"
#include "support/temp_dir.h"
#include "train/ckpt/format.h"
#include "train/ckpt/snapshot.h"

namespace endure::ckpt {
namespace {

bool on_shared(const Options& o, int64_t step) {
  return std::filesystem::exists(step_dir(o.dir, step) / kManifestName);
}

// Steps saved while the disk is busy live in the memory tier alone; the run's end writes
// the newest of them to the disk tiers, where it verifies and loads bit for bit.
TEST(CheckpointDiskBehind, MemoryOnlySavesStayInMemoryAndFlushWritesTheNewest) {
  test::TempDir dir;
  Options o{.dir = dir.path() / "shared",
            .keep_last = 0,
            .memory_dir = dir.path() / "shm",
            .local_dir = dir.path() / "local"};
  auto c = open_ok(o);
  std::vector<uint8_t> state;
  auto save = [&](int64_t step, Tiers tiers) {
    state = pattern(step, 3u << 20);
    return c->save_overlapped(step, {{"state", state.data(), state.size()}}, {{"step", step}},
                              tiers);
  };
  ASSERT_TRUE(save(1, Tiers::all).ok());
  EXPECT_TRUE(c->disk_busy()) << "a save to every tier is pending until its disk write ends";
  c->wait_copied();
  ASSERT_TRUE(save(2, Tiers::memory).ok());
  c->wait_copied();
  ASSERT_TRUE(save(3, Tiers::memory).ok());
  ASSERT_TRUE(c->wait().ok());
  EXPECT_FALSE(c->disk_busy());
  EXPECT_TRUE(on_shared(o, 1));
  EXPECT_FALSE(on_shared(o, 2));
  EXPECT_FALSE(on_shared(o, 3));
  EXPECT_FALSE(std::filesystem::exists(step_dir(o.local_dir, 3)));
  auto latest = c->latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 3);
  EXPECT_EQ(latest->tiers, std::vector<std::string>{"memory"});
  auto in_memory = c->load(3);
  ASSERT_TRUE(in_memory.ok()) << in_memory.error().message;
  EXPECT_EQ(in_memory->buffers.at("state"), pattern(3, 3u << 20));

  ASSERT_TRUE(c->flush().ok());
  EXPECT_TRUE(on_shared(o, 3));
  EXPECT_TRUE(verify_checkpoint(step_dir(o.dir, 3)).ok());
  EXPECT_TRUE(verify_checkpoint(step_dir(o.local_dir, 3)).ok());
  EXPECT_FALSE(on_shared(o, 2)) << "only the newest memory-only step is flushed";
  // A second flush has nothing left to write.
  ASSERT_TRUE(c->flush().ok());
  // A fresh checkpointer without the memory tier (another node) restores step 3 from disk.
  auto elsewhere = open_ok({.dir = o.dir});
  auto loaded = elsewhere->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->step, 3);
  EXPECT_EQ(loaded->buffers.at("state"), pattern(3, 3u << 20));
}

// A trainer's loop: each save goes to the memory tier alone while the disk still writes an
// earlier one. Saves are never refused, the newest is always in memory, and the run's end
// puts it on disk.
TEST(CheckpointDiskBehind, SavingEveryStepTheDiskFallsBehindAndTheNewestIsKept) {
  test::TempDir dir;
  Options o{.dir = dir.path() / "shared", .keep_last = 2, .memory_dir = dir.path() / "shm"};
  auto c = open_ok(o);
  // Each step's state made beforehand, so that the loop saves as fast as the memory tier
  // takes a copy: far faster than a disk write with its fsyncs.
  std::vector<std::vector<uint8_t>> states;
  for (int64_t step = 1; step <= 12; ++step) states.push_back(pattern(step, 1u << 20));
  std::vector<uint8_t> state;
  std::vector<int64_t> memory_only;  // the steps saved while the disk was behind
  for (int64_t step = 1; step <= 12; ++step) {
    c->wait_copied();  // the optimizer step writes the state
    state = states[static_cast<size_t>(step - 1)];
    const Tiers tiers = c->disk_busy() ? Tiers::memory : Tiers::all;
    if (tiers == Tiers::memory) memory_only.push_back(step);
    ASSERT_TRUE(c->save_overlapped(step, {{"state", state.data(), state.size()}}, {}, tiers).ok());
  }
  ASSERT_TRUE(c->wait().ok());
  // The disk fell behind (its first write, with its fsyncs, outlasts the next step's copy),
  // and what was saved meanwhile is in memory alone, never on disk.
  ASSERT_FALSE(memory_only.empty()) << "the disk kept up with every save";
  for (int64_t step : memory_only) EXPECT_FALSE(on_shared(o, step)) << "step " << step;
  auto latest = c->latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 12);
  EXPECT_EQ(latest->tiers.front(), "memory");
  ASSERT_TRUE(c->flush().ok());
  EXPECT_TRUE(on_shared(o, 12));
  auto loaded = open_ok({.dir = o.dir})->load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->step, 12);
  EXPECT_EQ(loaded->buffers.at("state"), pattern(12, 1u << 20));
}

// disk_duty: after each disk write the disk tiers rest, disk_busy() saying so, for the
// write's time x (1 / disk_duty - 1); a value outside (0, 1] is refused naming the field,
// before any folder is made.
TEST(CheckpointDiskBehind, TheDiskRestsAfterEachWriteForItsDuty) {
  test::TempDir dir;
  std::vector<uint8_t> state = pattern(1, 1u << 20);
  const std::vector<Buffer> buffers = {{"state", state.data(), state.size()}};
  {
    // A rest of 999 times the write (several fsyncs): far longer than this check takes.
    auto c = open_ok({.dir = dir.path() / "rarely",
                      .memory_dir = dir.path() / "shm-rarely",
                      .disk_duty = 0.001});
    ASSERT_TRUE(c->save(1, buffers).ok());
    ASSERT_TRUE(c->wait().ok());
    EXPECT_TRUE(on_shared({.dir = dir.path() / "rarely"}, 1));
    EXPECT_TRUE(c->disk_busy()) << "written, then resting";
  }
  auto c = open_ok(
      {.dir = dir.path() / "half", .memory_dir = dir.path() / "shm-half", .disk_duty = 0.5});
  ASSERT_TRUE(c->save(1, buffers).ok());
  ASSERT_TRUE(c->wait().ok());
  // The rest ends, as long after the write as the write took.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (c->disk_busy() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(c->disk_busy());

  for (double duty : {0.0, -0.5, 1.5, std::nan("")}) {
    auto refused = Checkpointer::open({.dir = dir.path() / "refused", .disk_duty = duty});
    ASSERT_FALSE(refused.ok()) << duty;
    EXPECT_EQ(refused.error().code, "ValidationException");
    EXPECT_NE(refused.error().message.find("disk_duty: a share of the time in (0, 1]"),
              std::string::npos)
        << refused.error().message;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "refused"));
  }
}

// Two ranks of one node share the memory tier's slot folders: however far each one's disk
// is behind, they put a step in the same slot, so the memory tier commits it.
TEST(CheckpointDiskBehind, RanksOfOneNodeCommitTheirMemoryOnlySavesTogether) {
  test::TempDir dir;
  const std::vector<Tiers> plan = {Tiers::all, Tiers::memory, Tiers::memory};
  auto rank = [&](int r) {
    auto c = open_ok(
        {.dir = dir.path() / "shared", .rank = r, .world = 2, .memory_dir = dir.path() / "shm"});
    const size_t size = (1u << 20) + static_cast<size_t>(r) * 4096;
    c->reserve(size);  // as a trainer does: no save waits to size its slot
    ASSERT_TRUE(c->wait().ok());
    std::vector<uint8_t> state;
    for (size_t i = 0; i < plan.size(); ++i) {
      const int64_t step = static_cast<int64_t>(i) + 1;
      c->wait_copied();
      state = pattern(step * 10 + r, size);
      // Rank 1 comes late to step 1: rank 0's disk write of it waits for rank 1's shard to
      // commit while rank 0 saves steps 2 and 3, and rank 1's is done before its step 2.
      if (r == 1 && i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(150));
      ASSERT_TRUE(
          c->save_overlapped(step, {{"state", state.data(), state.size()}}, {}, plan[i]).ok());
      if (r == 1 && i == 0) {
        ASSERT_TRUE(c->wait().ok());
      }
    }
    ASSERT_TRUE(c->wait().ok());
  };
  std::thread r1(rank, 1);
  rank(0);
  r1.join();
  auto c = open_ok(
      {.dir = dir.path() / "shared", .rank = 1, .world = 2, .memory_dir = dir.path() / "shm"});
  auto latest = c->latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 3);
  EXPECT_EQ(latest->tiers, std::vector<std::string>{"memory"});
  auto loaded = c->load(3);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->buffers.at("state"), pattern(31, (1u << 20) + 4096));
  EXPECT_TRUE(on_shared({.dir = dir.path() / "shared"}, 1));
}

TEST(CheckpointDiskBehind, AMemoryOnlySaveWithoutAMemoryTierIsRefusedAndChangesNothing) {
  test::TempDir dir;
  auto c = open_ok({.dir = dir.path()});
  uint8_t byte = 7;
  auto s = c->save_overlapped(1, {{"a", &byte, 1}}, {}, Tiers::memory);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "ValidationException");
  EXPECT_NE(s.error().message.find("tiers"), std::string::npos) << s.error().message;
  EXPECT_FALSE(c->save(1, {{"a", &byte, 1}}, {}, Tiers::memory).ok());
  ASSERT_TRUE(c->save(1, {{"a", &byte, 1}}).ok()) << "the refused saves claimed no step";
  ASSERT_TRUE(c->wait().ok());
  EXPECT_EQ(c->list().size(), 1u);
}

// The copy with its checksums taken on the way gives the checksums of the whole chunks,
// whatever the buffers' sizes and however many threads share the work.
TEST(Snapshot, ChecksumsAreThoseOfTheCopiedChunksFromAnyNumberOfThreads) {
  for (int threads : {1, 2, 4}) {
    auto a = pattern(1, 5'000'001), b = pattern(2, 3), c = pattern(3, 700'000);
    std::vector<Buffer> buffers = {{"a", a.data(), a.size()},
                                   {"empty", nullptr, 0},
                                   {"b", b.data(), b.size()},
                                   {"c", c.data(), c.size()}};
    const std::string header = shard_header(3);
    const size_t total = header.size() + a.size() + b.size() + c.size();
    std::vector<uint8_t> slot(total);
    Snapshot copy(header, buffers, slot.data(), 1u << 20, true);
    std::vector<std::thread> helpers;
    for (int t = 1; t < threads; ++t) helpers.emplace_back([&] { copy.finish(); });
    copy.finish();
    for (auto& h : helpers) h.join();
    std::vector<uint8_t> expected(header.begin(), header.end());
    for (const auto* v : {&a, &b, &c}) expected.insert(expected.end(), v->begin(), v->end());
    ASSERT_EQ(slot, expected) << threads << " threads";
    EXPECT_EQ(copy.checksums(), chunk_checksums(expected.data(), expected.size(), 1u << 20));
    EXPECT_EQ(copy.layout()[2]["offset"], header.size() + a.size());
  }
}

}  // namespace
}  // namespace endure::ckpt
