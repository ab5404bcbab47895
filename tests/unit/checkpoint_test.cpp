// The checkpoint engine: round trips, bad input, corruption of any byte, retention,
// several ranks, and SIGKILL at random points across many saves.
#include "endure/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "support/temp_dir.h"

namespace endure::ckpt {
namespace {

// Deterministic contents of step `step`'s buffer: the crash test checks them bit for bit.
std::vector<uint8_t> pattern(int64_t step, size_t size) {
  std::vector<uint8_t> v(size);
  std::mt19937_64 rng(static_cast<uint64_t>(step) * 7919 + size);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::unique_ptr<Checkpointer> open_ok(const Options& o) {
  auto c = Checkpointer::open(o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? std::move(*c) : nullptr;
}

Status save_pattern(Checkpointer& c, int64_t step, size_t weights = 3000, size_t optim = 1000) {
  auto w = pattern(step, weights), m = pattern(step + 1000000, optim);
  return c.save(step, {{"weights", w.data(), w.size()}, {"optimizer", m.data(), m.size()}},
                {{"step", step}, {"lr", 0.001}});
}

void expect_pattern(const Loaded& l, int64_t step, size_t weights = 3000, size_t optim = 1000) {
  ASSERT_EQ(l.buffers.count("weights"), 1u);
  EXPECT_EQ(l.buffers.at("weights"), pattern(step, weights)) << "step " << step;
  EXPECT_EQ(l.buffers.at("optimizer"), pattern(step + 1000000, optim)) << "step " << step;
}

TEST(Checkpoint, SavesInTheBackgroundAndLoadsBitExact) {
  test::TempDir dir;
  auto c = open_ok({dir.path()});
  ASSERT_TRUE(save_pattern(*c, 10).ok());
  ASSERT_TRUE(c->wait().ok());
  auto latest = c->latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 10);
  EXPECT_EQ(latest->world, 1);
  EXPECT_EQ(latest->user["lr"], 0.001);
  auto loaded = c->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->step, 10);
  expect_pattern(*loaded, 10);
  EXPECT_TRUE(verify_checkpoint(latest->path).ok());
}

TEST(Checkpoint, BadInputIsRefusedAndWritesNothing) {
  test::TempDir dir;
  auto c = open_ok({dir.path()});
  uint8_t byte = 1;
  EXPECT_FALSE(c->save(1, {}).ok());
  EXPECT_FALSE(c->save(1, {{"a", &byte, 1}, {"a", &byte, 1}}).ok());
  EXPECT_FALSE(c->save(1, {{"", &byte, 1}}).ok());
  EXPECT_FALSE(c->save(-1, {{"a", &byte, 1}}).ok());
  EXPECT_TRUE(c->list().empty());
  ASSERT_TRUE(c->save(5, {{"a", &byte, 1}}).ok());
  auto again = c->save(5, {{"a", &byte, 1}});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("step"), std::string::npos);
  EXPECT_FALSE(Checkpointer::open({dir.path(), 2, 2}).ok()) << "rank must be below world";
}

// Every single byte of the newest checkpoint's shard and manifest, flipped in turn, is
// found on load, which then falls back to the previous checkpoint.
TEST(Checkpoint, AnyFlippedByteIsFoundAndThePreviousCheckpointUsed) {
  test::TempDir dir;
  auto c = open_ok({dir.path(), 0, 1, 0, 0, 600, 4096});
  ASSERT_TRUE(save_pattern(*c, 1).ok());
  ASSERT_TRUE(save_pattern(*c, 2).ok());
  ASSERT_TRUE(c->wait().ok());
  auto step2 = c->latest()->path;
  for (const char* file : {"rank-00000.shard", "MANIFEST.json"}) {
    auto path = step2 / file;
    std::string original;
    {
      std::ifstream in(path, std::ios::binary);
      original.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_FALSE(original.empty());
    for (size_t i = 0; i < original.size(); ++i) {
      std::string damaged = original;
      damaged[i] = static_cast<char>(damaged[i] ^ 0x01);
      std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
      auto loaded = c->load();
      ASSERT_TRUE(loaded.ok()) << file << " byte " << i;
      ASSERT_EQ(loaded->step, 1) << file << " byte " << i << " went unnoticed";
      ASSERT_FALSE(verify_checkpoint(step2).ok()) << file << " byte " << i;
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << original;
  }
  auto restored = c->load();
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(restored->step, 2);
}

TEST(Checkpoint, LoadIntoTheCallersMemoryVerifiesAndFallsBack) {
  test::TempDir dir;
  auto c = open_ok({dir.path(), 0, 1, 0, 0, 600, 4096});
  ASSERT_TRUE(save_pattern(*c, 1).ok());
  ASSERT_TRUE(save_pattern(*c, 2).ok());
  ASSERT_TRUE(c->wait().ok());
  std::vector<uint8_t> w(3000), m(1000);
  auto info = c->load_into(-1, {{"weights", w.data(), w.size()}, {"optimizer", m.data(), m.size()}});
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->step, 2);
  EXPECT_EQ(w, pattern(2, 3000));
  EXPECT_EQ(m, pattern(2 + 1000000, 1000));
  // A wrong size is the caller's error, not a damaged checkpoint.
  std::vector<uint8_t> small(10);
  auto bad = c->load_into(-1, {{"weights", small.data(), small.size()}, {"optimizer", m.data(), m.size()}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "ValidationException");
  // Damage anywhere in step 2's shard (every 97th byte, in turn): step 1 is restored.
  auto shard = c->latest()->path / "rank-00000.shard";
  std::string original;
  {
    std::ifstream in(shard, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t i = 0; i < original.size(); i += 97) {
    std::string damaged = original;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x80);
    std::ofstream(shard, std::ios::binary | std::ios::trunc) << damaged;
    auto got = c->load_into(-1, {{"weights", w.data(), w.size()}, {"optimizer", m.data(), m.size()}});
    ASSERT_TRUE(got.ok()) << "byte " << i;
    ASSERT_EQ(got->step, 1) << "byte " << i << " went unnoticed";
    ASSERT_EQ(w, pattern(1, 3000));
  }
}

TEST(Checkpoint, RetentionKeepsTheLastAndEveryMthAfterANewerCommit) {
  test::TempDir dir;
  auto c = open_ok({dir.path(), 0, 1, 2, 5});
  for (int64_t s = 1; s <= 12; ++s) ASSERT_TRUE(save_pattern(*c, s, 100, 10).ok());
  ASSERT_TRUE(c->wait().ok());
  std::vector<int64_t> steps;
  for (const auto& info : c->list()) steps.push_back(info.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{12, 11, 10, 5}));
}

// Three ranks save step 1; rank 2 dies before its shard of step 2 is durable: step 2 is
// never reported complete, and rank 0's commit of it fails.
TEST(Checkpoint, ARankThatDiesBeforeItsShardIsDurableLeavesTheStepUncommitted) {
  test::TempDir dir;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 3; ++rank) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      {
        auto c = Checkpointer::open({dir.path(), rank, 3, 3, 0, 2.0});
        if (!c.ok() || !save_pattern(**c, 1).ok() || !(*c)->wait().ok()) code = 1;
        if (rank == 2) ::_exit(code);  // dies before saving step 2
        Status s = save_pattern(**c, 2);
        Status w = (*c)->wait();
        if (rank == 0 && w.ok()) code = 2;  // the commit must not happen
        if (rank != 0 && !w.ok()) code = 3;
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "pid " << pid;
  }
  auto c = open_ok({dir.path(), 1, 3});
  auto latest = c->latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 1);
  auto loaded = c->load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->step, 1);
  expect_pattern(*loaded, 1);
}

// A writer saving step after step is killed with SIGKILL at random moments, 200 times
// (seeded); each time the newest committed checkpoint loads bit-exact, never a partial one,
// and never one older than the writer had seen committed.
TEST(Checkpoint, SigkillAtRandomPointsAlwaysLeavesTheNewestCommittedCheckpoint) {
  test::TempDir dir;
  auto committed_log = dir.path() / "committed";
  std::mt19937 rng(20261202);
  const size_t kWeights = 192 * 1024, kOptim = 64 * 1024;
  int64_t last_committed = -1;
  int restores = 0;
  for (int kill = 0; kill < 200; ++kill) {
    int64_t first = last_committed + 1;
    {
      auto c = open_ok({dir.path() / "ckpt"});
      if (auto l = c->latest()) first = l->step + 1;
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      auto c = Checkpointer::open({dir.path() / "ckpt", 0, 1, 2, 0});
      if (!c.ok()) ::_exit(1);
      for (int64_t s = first;; ++s) {
        if (!save_pattern(**c, s, kWeights, kOptim).ok() || !(*c)->wait().ok()) ::_exit(1);
        std::ofstream(committed_log, std::ios::app) << s << "\n" << std::flush;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 40000)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    {
      std::ifstream in(committed_log);
      int64_t s;
      while (in >> s) last_committed = std::max(last_committed, s);
    }
    auto c = open_ok({dir.path() / "ckpt"});
    auto loaded = c->load();
    if (last_committed < 0 && !loaded.ok()) continue;
    ASSERT_TRUE(loaded.ok()) << "kill " << kill << ": " << loaded.error().message;
    ASSERT_GE(loaded->step, last_committed) << "kill " << kill;
    expect_pattern(*loaded, loaded->step, kWeights, kOptim);
    ++restores;
  }
  EXPECT_GT(restores, 150);
  EXPECT_GT(last_committed, 50) << "the writer should have committed many steps";
}

}  // namespace
}  // namespace endure::ckpt
