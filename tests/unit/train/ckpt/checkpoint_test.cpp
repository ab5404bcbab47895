// The checkpoint engine: round trips, bad input, corruption of any byte, retention,
// several ranks, and SIGKILL at random points across many saves.
#include "endure/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "support/checkpoint_support.h"
#include "support/temp_dir.h"

namespace endure::ckpt {
namespace {

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
  auto c = open_ok({.dir = dir.path()});
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

// A save overlapped with the next step: the copy runs while the caller reads the state
// (its forward and backward), and the checkpoint is the state at the call, bit for bit the
// same as one taken with training stopped, although the state changes right after
// wait_copied() (its optimizer step).
TEST(Checkpoint, AnOverlappedSaveIsTheStateAtItsCall) {
  test::TempDir overlapped_dir, stopped_dir;
  auto overlapped = open_ok({.dir = overlapped_dir.path()});
  auto stopped = open_ok({.dir = stopped_dir.path()});
  const size_t n = 8u << 20;  // large enough that the copy is still running below
  auto w = pattern(5, n), m = pattern(1000005, n / 3);
  std::vector<Buffer> state = {{"weights", w.data(), w.size()}, {"optimizer", m.data(), m.size()}};
  ASSERT_TRUE(stopped->save(5, state).ok());
  ASSERT_TRUE(overlapped->save_overlapped(5, state).ok());
  uint64_t sum = 0;  // the next step's reads, while the copy runs
  for (size_t i = 0; i < w.size(); i += 64) sum += w[i];
  overlapped->wait_copied();
  for (auto& b : w) b = static_cast<uint8_t>(b + 1);  // the optimizer step writes
  for (auto& b : m) b = static_cast<uint8_t>(b ^ 0x5a);
  ASSERT_TRUE(overlapped->save_overlapped(6, state).ok());
  // A step not above the last one is refused, as by save().
  EXPECT_EQ(overlapped->save_overlapped(6, state).error().code, "ValidationException");
  ASSERT_TRUE(overlapped->wait().ok());
  ASSERT_TRUE(stopped->wait().ok());
  auto at5 = overlapped->load(5), reference = stopped->load(5), at6 = overlapped->load(6);
  ASSERT_TRUE(at5.ok() && reference.ok() && at6.ok());
  EXPECT_EQ(at5->buffers, reference->buffers);
  EXPECT_EQ(at5->buffers.at("weights"), pattern(5, n));
  EXPECT_EQ(at6->buffers.at("weights"), w);
  EXPECT_EQ(at6->buffers.at("optimizer"), m);
  EXPECT_GT(sum, 0u);
}

TEST(Checkpoint, BadInputIsRefusedAndWritesNothing) {
  test::TempDir dir;
  auto c = open_ok({.dir = dir.path()});
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
  EXPECT_FALSE(Checkpointer::open({.dir = dir.path(), .rank = 2, .world = 2}).ok()) << "rank must be below world";
}

// Every single byte of the newest checkpoint's shard and manifest, flipped in turn, is
// found on load, which then falls back to the previous checkpoint.
TEST(Checkpoint, AnyFlippedByteIsFoundAndThePreviousCheckpointUsed) {
  test::TempDir dir;
  auto c = open_ok({.dir = dir.path(), .keep_last = 0, .chunk_bytes = 4096});
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
  auto c = open_ok({.dir = dir.path(), .keep_last = 0, .chunk_bytes = 4096});
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

// State of several megabytes in buffers of odd sizes, checksummed in chunks that line up
// with neither the buffers nor the reader's blocks: restored bit-exact, and a byte damaged
// deep inside, where the reader is blocks ahead of the checks, is still found.
TEST(Checkpoint, LargeStateInOddBuffersRestoresBitExactAndDamageDeepInsideIsFound) {
  test::TempDir dir;
  auto c = open_ok({.dir = dir.path(), .keep_last = 0, .chunk_bytes = (1u << 20) + 3 * 4096});
  const std::vector<size_t> sizes = {1, 5'000'003, 4096, 7, 4'194'304, 3'333'333};
  auto state = [&](int64_t step) {
    std::vector<std::vector<uint8_t>> v;
    for (size_t i = 0; i < sizes.size(); ++i) v.push_back(pattern(step * 100 + static_cast<int64_t>(i), sizes[i]));
    return v;
  };
  auto buffers_of = [&](std::vector<std::vector<uint8_t>>& v) {
    std::vector<MutableBuffer> out;
    for (size_t i = 0; i < v.size(); ++i) out.push_back({"b" + std::to_string(i), v[i].data(), v[i].size()});
    return out;
  };
  for (int64_t step : {1, 2}) {
    auto v = state(step);
    std::vector<Buffer> in;
    for (const auto& b : buffers_of(v)) in.push_back({b.name, b.data, b.size});
    ASSERT_TRUE(c->save(step, in).ok());
  }
  ASSERT_TRUE(c->wait().ok());
  std::vector<std::vector<uint8_t>> got;
  for (size_t n : sizes) got.emplace_back(n, 0);
  auto info = c->load_into(-1, buffers_of(got));
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->step, 2);
  EXPECT_TRUE(got == state(2)) << "step 2 not restored bit-exact";

  auto shard = c->latest()->path / "rank-00000.shard";
  const auto size = std::filesystem::file_size(shard);
  for (uint64_t at : {size - 1, size / 2 + 12345, uint64_t{9'000'001}}) {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char byte = 0;
    f.read(&byte, 1);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(byte ^ 0x10));
    f.close();
    auto fallback = c->load_into(-1, buffers_of(got));
    ASSERT_TRUE(fallback.ok()) << fallback.error().message;
    EXPECT_EQ(fallback->step, 1) << "byte " << at << " went unnoticed";
    EXPECT_TRUE(got == state(1)) << "step 1 not restored bit-exact after byte " << at;
    std::fstream(shard, std::ios::in | std::ios::out | std::ios::binary).seekp(static_cast<std::streamoff>(at)).put(byte);
  }
  auto again = c->load_into(2, buffers_of(got));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(got == state(2));
}

TEST(Checkpoint, RetentionKeepsTheLastAndEveryMthAfterANewerCommit) {
  test::TempDir dir;
  auto c = open_ok({.dir = dir.path(), .keep_last = 2, .keep_every = 5});
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
        auto c = Checkpointer::open({.dir = dir.path(), .rank = rank, .world = 3, .keep_last = 3, .commit_timeout_seconds = 2.0});
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
  auto c = open_ok({.dir = dir.path(), .rank = 1, .world = 3});
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
// and never one older than the writer had seen committed. With node-local tiers a step
// may exist in the memory tier before the shared folder has it: a restore finds it there.
void sigkill_writer_200_times(const std::filesystem::path& root, bool tiers) {
  auto committed_log = root / "committed";
  Options base{.dir = root / "ckpt", .keep_last = 2};
  if (tiers) {
    base.memory_dir = root / "shm";
    base.local_dir = root / "local";
  }
  std::mt19937 rng(20261202);
  const size_t kWeights = 192 * 1024, kOptim = 64 * 1024;
  int64_t last_committed = -1;
  int restores = 0;
  std::set<std::string> tiers_used;
  for (int kill = 0; kill < 200; ++kill) {
    int64_t first = last_committed + 1;
    {
      auto c = open_ok(base);
      if (auto l = c->latest()) first = l->step + 1;
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      auto c = Checkpointer::open(base);
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
    auto c = open_ok(base);
    std::vector<uint8_t> w(kWeights), m(kOptim);
    auto loaded = c->load_into(-1, {{"weights", w.data(), w.size()}, {"optimizer", m.data(), m.size()}});
    if (last_committed < 0 && !loaded.ok()) continue;
    ASSERT_TRUE(loaded.ok()) << "kill " << kill << ": " << loaded.error().message;
    ASSERT_GE(loaded->step, last_committed) << "kill " << kill;
    ASSERT_EQ(w, pattern(loaded->step, kWeights)) << "kill " << kill << ", step " << loaded->step;
    ASSERT_EQ(m, pattern(loaded->step + 1000000, kOptim)) << "kill " << kill << ", step " << loaded->step;
    tiers_used.insert(loaded->tiers.at(0));
    ++restores;
  }
  EXPECT_GT(restores, 150);
  EXPECT_GT(last_committed, 50) << "the writer should have committed many steps";
  if (tiers) {
    EXPECT_TRUE(tiers_used.count("memory")) << "restores should come from the memory tier";
  }
}

TEST(Checkpoint, SigkillAtRandomPointsAlwaysLeavesTheNewestCommittedCheckpoint) {
  test::TempDir dir;
  sigkill_writer_200_times(dir.path(), false);
}

TEST(CheckpointTiers, SigkillAtRandomPointsRestoresTheNewestStepOfAnyTier) {
  test::TempDir dir;
  sigkill_writer_200_times(dir.path(), true);
}

// A step in every tier restores from the fastest copy that verifies: memory, then the local
// disk, then the shared folder; a new process finds the memory tier's copy.
TEST(CheckpointTiers, RestoreReadsTheFastestTierThatVerifies) {
  test::TempDir dir;
  Options o{.dir = dir.path() / "shared", .memory_dir = dir.path() / "shm", .local_dir = dir.path() / "local"};
  {
    auto c = open_ok(o);
    ASSERT_TRUE(save_pattern(*c, 1).ok());
    ASSERT_TRUE(save_pattern(*c, 2).ok());
    ASSERT_TRUE(c->wait().ok());
    auto latest = c->latest();
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->step, 2);
    EXPECT_EQ(latest->tiers, (std::vector<std::string>{"memory", "local", "shared"}));
  }
  auto tier_of_restore = [&](int64_t want_step) {
    auto c = open_ok(o);
    auto l = c->load();
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error().message);
    if (!l.ok()) return std::string();
    EXPECT_EQ(l->step, want_step);
    expect_pattern(*l, want_step);
    std::vector<uint8_t> w(3000), m(1000);
    auto info = c->load_into(-1, {{"weights", w.data(), w.size()}, {"optimizer", m.data(), m.size()}});
    return info.ok() ? info->tiers.at(0) : std::string("error");
  };
  EXPECT_EQ(tier_of_restore(2), "memory");
  // Damage step 2's memory copy: the local disk's copy is used, then the shared one.
  std::filesystem::path mem_shard;
  for (auto slot : {"slot-0", "slot-1"}) {
    auto m = o.memory_dir / slot;
    if (std::filesystem::exists(m / "MANIFEST.json")) {
      std::ifstream in(m / "MANIFEST.json");
      std::string text((std::istreambuf_iterator<char>(in)), {});
      if (text.find("\"step\":2") != std::string::npos) mem_shard = m / "rank-00000.shard";
    }
  }
  ASSERT_FALSE(mem_shard.empty());
  auto flip = [](const std::filesystem::path& p, std::streamoff at) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(at);
    char b = 0;
    f.get(b);
    f.seekp(at);
    f.put(static_cast<char>(b ^ 0x40));
  };
  flip(mem_shard, 100);
  EXPECT_EQ(tier_of_restore(2), "local");
  flip(o.local_dir / "step-000000000002" / "rank-00000.shard", 200);
  EXPECT_EQ(tier_of_restore(2), "shared");
  // Without the shared copy, every copy of step 2 is damaged: step 1 is the newest left.
  std::filesystem::remove_all(o.dir / "step-000000000002");
  auto c = open_ok(o);
  auto l = c->load();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->step, 1);
  expect_pattern(*l, 1);
}

// Node-local tier folders reused with another shared folder (another job, or a new run's
// folder) are never restored from: their copies belong to the folder that made them.
TEST(CheckpointTiers, TierCopiesOfAnotherSharedFolderAreNotUsed) {
  test::TempDir dir;
  Options first{.dir = dir.path() / "first", .memory_dir = dir.path() / "shm", .local_dir = dir.path() / "local"};
  {
    auto c = open_ok(first);
    ASSERT_TRUE(save_pattern(*c, 5).ok());
    ASSERT_TRUE(c->wait().ok());
  }
  Options second = first;
  second.dir = dir.path() / "second";
  auto c = open_ok(second);
  EXPECT_FALSE(c->latest().has_value());
  EXPECT_FALSE(c->load().ok());
  ASSERT_TRUE(save_pattern(*c, 1).ok());
  ASSERT_TRUE(c->wait().ok());
  auto latest = c->latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 1);
  EXPECT_EQ(latest->tiers, (std::vector<std::string>{"memory", "local", "shared"}));
}

// reserve() readies the slots without touching what the memory tier holds: a restarted
// process that reserves still restores from memory, and saves after it as before.
TEST(CheckpointTiers, ReserveKeepsTheMemoryTiersSteps) {
  test::TempDir dir;
  Options o{.dir = dir.path() / "shared", .memory_dir = dir.path() / "shm", .local_dir = dir.path() / "local"};
  {
    auto c = open_ok(o);
    c->reserve(4000);
    ASSERT_TRUE(save_pattern(*c, 1).ok());
    ASSERT_TRUE(save_pattern(*c, 2).ok());
    ASSERT_TRUE(c->wait().ok());
  }
  auto c = open_ok(o);
  c->reserve(4000);
  ASSERT_TRUE(c->wait().ok());
  auto latest = c->latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 2);
  EXPECT_EQ(latest->tiers, (std::vector<std::string>{"memory", "local", "shared"}));
  std::vector<uint8_t> w(3000), m(1000);
  auto info = c->load_into(-1, {{"weights", w.data(), w.size()}, {"optimizer", m.data(), m.size()}});
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->tiers.at(0), "memory");
  ASSERT_TRUE(save_pattern(*c, 3).ok());
  ASSERT_TRUE(c->wait().ok());
  auto l = c->load();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->step, 3);
  expect_pattern(*l, 3);
}

// Double buffering: saves in a row all land; after a restart the first save does not
// overwrite the memory tier's newest step; the local disk keeps local_keep_last steps.
TEST(CheckpointTiers, SlotsAlternateAndTheLocalDiskKeepsItsNewestSteps) {
  test::TempDir dir;
  Options o{.dir = dir.path() / "shared", .memory_dir = dir.path() / "shm", .local_dir = dir.path() / "local"};
  {
    auto c = open_ok(o);
    for (int64_t s = 1; s <= 5; ++s) ASSERT_TRUE(save_pattern(*c, s).ok());
    ASSERT_TRUE(c->wait().ok());
  }
  auto c = open_ok(o);
  std::map<int64_t, std::vector<std::string>> tiers;
  for (const auto& info : c->list()) tiers[info.step] = info.tiers;
  EXPECT_EQ(tiers[5], (std::vector<std::string>{"memory", "local", "shared"}));
  EXPECT_EQ(tiers[4], (std::vector<std::string>{"memory", "local", "shared"}));
  EXPECT_EQ(tiers[3], (std::vector<std::string>{"shared"}));
  ASSERT_TRUE(save_pattern(*c, 6).ok());
  ASSERT_TRUE(c->wait().ok());
  tiers.clear();
  for (const auto& info : c->list()) tiers[info.step] = info.tiers;
  EXPECT_EQ(tiers[6].front(), "memory");
  EXPECT_EQ(tiers[5].front(), "memory") << "the first save after a restart keeps the newest in memory";
  EXPECT_EQ(tiers[4], (std::vector<std::string>{"shared"}));
}

// Two ranks of one node share the node-local tiers: the memory tier's step is committed
// once both shards are there, and each rank restores its own shard from it.
TEST(CheckpointTiers, RanksOfOneNodeCommitTheNodeLocalTiers) {
  test::TempDir dir;
  auto options = [&](int rank) {
    return Options{.dir = dir.path() / "shared", .rank = rank, .world = 2,
                   .memory_dir = dir.path() / "shm", .local_dir = dir.path() / "local"};
  };
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      auto c = open_ok(options(rank));
      EXPECT_TRUE(save_pattern(*c, 7).ok());
      EXPECT_TRUE(c->wait().ok());
    });
  }
  for (auto& t : ranks) t.join();
  for (int rank = 0; rank < 2; ++rank) {
    auto c = open_ok(options(rank));
    auto latest = c->latest();
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->tiers, (std::vector<std::string>{"memory", "local", "shared"}));
    std::vector<uint8_t> w(3000), m(1000);
    auto info = c->load_into(-1, {{"weights", w.data(), w.size()}, {"optimizer", m.data(), m.size()}});
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->tiers.at(0), "memory");
    EXPECT_EQ(w, pattern(7, 3000));
  }
}

}  // namespace
}  // namespace endure::ckpt
