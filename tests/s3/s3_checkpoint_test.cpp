// The checkpoint engine's S3 tier against a real S3-compatible server: a save round-trips
// bit for bit in the disk format, a step is visible only once every shard object is whole
// (even when the server dies mid-upload), a flipped byte is found and the previous step
// restored, retention keeps the newest committed steps, and saves faster than the store
// fall behind by whole steps.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "endure/checkpoint.h"
#include "s3/s3_error.h"
#include "s3_checkpoint_fixture.h"

namespace endure::ckpt {
namespace {

using test::contains;
using Clock = std::chrono::steady_clock;

// The lines the engine logs (spdlog's default logger, common/log.h) while this lives: what
// a test reads to prove a step was skipped. Made before the checkpointer, read after wait().
class LoggedLines {
 public:
  LoggedLines() { spdlog::default_logger()->sinks().push_back(sink_); }
  ~LoggedLines() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LoggedLines(const LoggedLines&) = delete;
  LoggedLines& operator=(const LoggedLines&) = delete;

  // Every line logged so far that holds `text`.
  std::vector<std::string> with(const std::string& text) const {
    std::vector<std::string> out;
    for (auto& line : sink_->last_formatted()) {
      if (contains(line, text)) out.push_back(line);
    }
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096);
};

class S3TierTest : public test::S3CheckpointTest {
 protected:
  std::unique_ptr<Checkpointer> open(const Options& o) {
    auto c = Checkpointer::open(o);
    EXPECT_TRUE(c) << c.error().message;
    return c ? std::move(*c) : nullptr;
  }

  // Saves `step` with two buffers of noise (weights of `bytes`, a small optimizer part).
  std::map<std::string, std::vector<uint8_t>> save(Checkpointer& c, int64_t step,
                                                   size_t bytes = 300 << 10) {
    std::map<std::string, std::vector<uint8_t>> state = {{"weights", noise(bytes, step)},
                                                         {"optim", noise(1000 + step, step + 100)}};
    std::vector<Buffer> buffers;
    for (auto& [name, v] : state) buffers.push_back({name, v.data(), v.size()});
    Status s = c.save(step, buffers, {{"step", step}});
    EXPECT_TRUE(s) << s.error().message;
    return state;
  }

  std::string object(const std::string& key) {
    auto got = client_->get_object(bucket_, key);
    EXPECT_TRUE(got) << got.error().message;
    return got ? *got : "";
  }

  // The committed steps in the store, newest first.
  std::vector<int64_t> committed(const std::string& prefix) {
    std::vector<int64_t> out;
    auto steps = list_s3(uri(prefix));
    EXPECT_TRUE(steps) << steps.error().message;
    if (!steps) return out;
    for (const auto& info : *steps) {
      if (info.committed) out.push_back(info.step);
    }
    return out;
  }
};

TEST_F(S3TierTest, ASaveRoundTripsBitForBitInTheDiskFormat) {
  Options o = options("run");
  std::map<std::string, std::vector<uint8_t>> state;
  {
    auto c = open(o);
    ASSERT_TRUE(c);
    state = save(*c, 5);
    Status done = c->wait();
    ASSERT_TRUE(done) << done.error().message;
  }
  // The same bytes, descriptor and manifest as on disk.
  for (const char* name : {"rank-00000.shard", "rank-00000.json", "MANIFEST.json"}) {
    auto disk = fs::read_file(o.dir / "step-000000000005" / name);
    ASSERT_TRUE(disk);
    EXPECT_TRUE(object(std::string("run/step-000000000005/") + name) == *disk) << name;
  }
  Status ok = verify_checkpoint(uri("run/step-000000000005"));
  EXPECT_TRUE(ok) << ok.error().message;

  // With the folder gone, the step comes back from S3 alone.
  std::filesystem::remove_all(o.dir);
  auto c = open(o);
  ASSERT_TRUE(c);
  auto latest = c->latest();
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 5);
  EXPECT_EQ(latest->tiers, std::vector<std::string>{"s3"});
  auto loaded = c->load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->step, 5);
  EXPECT_EQ(loaded->user["step"], 5);
  EXPECT_TRUE(loaded->buffers == state);

  std::vector<uint8_t> weights(state["weights"].size()), optim(state["optim"].size());
  auto into = c->load_into(
      -1, {{"weights", weights.data(), weights.size()}, {"optim", optim.data(), optim.size()}});
  ASSERT_TRUE(into) << into.error().message;
  EXPECT_EQ(into->tiers, std::vector<std::string>{"s3"});
  EXPECT_TRUE(weights == state["weights"] && optim == state["optim"]);
}

TEST_F(S3TierTest, ServerKilledMidUploadLeavesNoVisibleStepAndTheNextSaveSucceeds) {
  Options o = options("killed");
  auto c = open(o);
  ASSERT_TRUE(c);
  save(*c, 1);
  ASSERT_TRUE(c->wait());

  // A shard of 40 MiB goes up in 8 MiB parts; the server dies as the first part is stored.
  std::atomic<bool> stop{false}, killed{false};
  std::thread watcher([&] {
    while (!stop) {
      std::error_code ec;
      for (auto it = std::filesystem::recursive_directory_iterator(server_->data_dir(), ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        // s3rver keeps a stored part as BUCKET/._S3rver_uploads/ID/N, with N.md5 beside it.
        if (it->path().extension() == ".md5" && contains(it->path().string(), "_S3rver_uploads")) {
          killed = true;
          return;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  // The server is the test thread's child (killed with the thread that started it).
  save(*c, 2, 40u << 20);
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!killed && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  stop = true;
  watcher.join();
  ASSERT_TRUE(killed) << "no part was stored";
  server_->kill();

  Status failed = c->wait();
  ASSERT_FALSE(failed) << "the upload of step 2 succeeded with the server dead";
  EXPECT_PRED2(contains, failed.error().message, "step-000000000002/rank-00000.shard");
  // The faster tier has it all the same.
  EXPECT_TRUE(verify_checkpoint(o.dir / "step-000000000002"));

  ASSERT_TRUE(server_->start());
  EXPECT_EQ(committed("killed"), std::vector<int64_t>{1});
  auto head = client_->head_object(bucket_, "killed/step-000000000002/MANIFEST.json");
  ASSERT_FALSE(head);
  EXPECT_TRUE(s3::is_not_found(head.error()));

  save(*c, 3);
  Status ok = c->wait();
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(committed("killed"), (std::vector<int64_t>{3, 1}));

  // A reader never takes step 2 from S3: with the folder gone, the newest is 3.
  c.reset();
  std::filesystem::remove_all(o.dir);
  auto reader = open(o);
  ASSERT_TRUE(reader);
  auto loaded = reader->load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->step, 3);
}

TEST_F(S3TierTest, AFlippedByteInAShardObjectIsFoundAndThePreviousStepRestored) {
  Options o = options("flip");
  std::map<std::string, std::vector<uint8_t>> first;
  {
    auto c = open(o);
    ASSERT_TRUE(c);
    first = save(*c, 1);
    ASSERT_TRUE(c->wait());
    save(*c, 2);
    ASSERT_TRUE(c->wait());
  }
  std::filesystem::remove_all(o.dir);
  const auto damaged = stored("flip/step-000000000002/rank-00000.shard");
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f) << damaged;
    f.seekg(200000);
    char byte = 0;
    f.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x10);
    f.seekp(200000);
    f.write(&byte, 1);
  }
  Status bad = verify_checkpoint(uri("flip/step-000000000002"));
  ASSERT_FALSE(bad);
  EXPECT_PRED2(contains, bad.error().message, "chunk 3 (bytes 196608..) fails its checksum");

  auto c = open(o);
  ASSERT_TRUE(c);
  auto loaded = c->load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->step, 1);
  EXPECT_TRUE(loaded->buffers == first);
}

TEST_F(S3TierTest, RetentionKeepsTheNewestCommittedSteps) {
  Options o = options("keep");
  o.keep_last = 2;
  // An upload that never finished, below the steps to come, and a stray newer one.
  put("keep/step-000000000000/rank-00000.shard", "half");
  auto c = open(o);
  ASSERT_TRUE(c);
  for (int64_t step = 1; step <= 4; ++step) {
    save(*c, step);
    Status s = c->wait();
    ASSERT_TRUE(s) << s.error().message;
  }
  put("keep/step-000000000009/rank-00000.shard", "still uploading");
  EXPECT_EQ(committed("keep"), (std::vector<int64_t>{4, 3}));
  auto all = list_s3(uri("keep"));
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ(all->front().step, 9);
  EXPECT_FALSE(all->front().committed);

  // prune() on the prefix: keep 1 of the committed; the newer uncommitted one stays.
  Status pruned = prune(uri("keep"), 1, 0);
  ASSERT_TRUE(pruned) << pruned.error().message;
  EXPECT_EQ(committed("keep"), std::vector<int64_t>{4});
  auto left = client_->list_objects(bucket_, "keep/");
  ASSERT_TRUE(left);
  for (const auto& obj : *left) {
    EXPECT_TRUE(contains(obj.key, "step-000000000004/") || contains(obj.key, "step-000000000009/"))
        << obj.key;
  }
}

TEST_F(S3TierTest, SavesFasterThanTheStoreFallBehindByWholeSteps) {
  LoggedLines logged;
  Options o = options("fast");
  o.keep_last = 0;  // nothing pruned: a step missing from the store was skipped
  auto c = open(o);
  ASSERT_TRUE(c);
  // Saves back to back: each is on disk before the next, while uploads of 24 MiB take longer
  // (signed part by part, and stored by a server in JavaScript). The state is made once, its
  // first bytes the step, so that nothing but the disk paces the saves.
  std::vector<uint8_t> weights = noise(24u << 20, 1);
  for (int64_t step = 1; step <= 6; ++step) {
    std::memcpy(weights.data(), &step, sizeof(step));
    Status saved = c->save(step, {{"weights", weights.data(), weights.size()}}, {{"step", step}});
    ASSERT_TRUE(saved) << saved.error().message;
    while (c->disk_busy()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Status s = c->wait();
  ASSERT_TRUE(s) << s.error().message;
  auto steps = committed("fast");
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.front(), 6);  // the newest always goes up
  // It fell behind: steps were skipped, each said so, and none went up in part.
  EXPECT_LT(steps.size(), 6u) << "every step went up: the store never fell behind";
  auto all = list_s3(uri("fast"));
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), steps.size()) << "a step was left in the store without its manifest";
  for (const auto& info : *all) {
    EXPECT_TRUE(info.committed && info.valid) << info.step << ": " << info.reason;
  }
  for (int64_t step = 1; step <= 6; ++step) {
    const bool up = std::find(steps.begin(), steps.end(), step) != steps.end();
    const auto said = logged.with(fmt::format("checkpoint step {}: s3 tier skips it", step));
    EXPECT_EQ(said.size(), up ? 0u : 1u) << "step " << step << (up ? " went up" : " is missing");
  }
}

TEST_F(S3TierTest, RankZeroMovesOnWhenAnotherRankSkippedAStep) {
  // Two ranks sharing the folder and the prefix; rank 1's tier never uploads step 1 (as
  // when a newer save replaced it while its store was slow), and uploads step 2.
  LoggedLines logged;
  Options o0 = options("ranks");
  o0.world = 2;
  // Far beyond the second rank 0 takes to see rank 1's newer step; within the test's bound,
  // so that a rank 0 that waits it out fails here, saying so.
  o0.commit_timeout_seconds = 60;
  Options o1 = o0;
  o1.rank = 1;
  Options o1_no_s3 = o1;
  o1_no_s3.s3.clear();
  {
    auto r1 = open(o1_no_s3);
    ASSERT_TRUE(r1);
    save(*r1, 1);
    ASSERT_TRUE(r1->wait());
  }
  auto r0 = open(o0);
  ASSERT_TRUE(r0);
  save(*r0, 1);  // committed on disk; in S3 it waits for rank 1's step 1
  {
    auto r1 = open(o1);
    ASSERT_TRUE(r1);
    save(*r1, 2);
    Status s = r1->wait();
    ASSERT_TRUE(s) << s.error().message;
  }
  save(*r0, 2);
  Status s = r0->wait();
  ASSERT_TRUE(s) << s.error().message;
  // Rank 0 gave step 1 up on seeing rank 1's step 2, not by waiting out its timeout.
  const std::string gave_up =
      "checkpoint step 1: s3 tier skips it: rank 1 uploaded a newer step instead of step 1";
  EXPECT_EQ(logged.with(gave_up).size(), 1u);
  EXPECT_TRUE(logged.with("did not upload its shard").empty());
  EXPECT_EQ(committed("ranks"), std::vector<int64_t>{2});
  auto info = list_s3(uri("ranks"));
  ASSERT_TRUE(info);
  ASSERT_FALSE(info->empty());
  EXPECT_EQ(info->front().world, 2);
  EXPECT_TRUE(info->front().valid) << info->front().reason;
}

TEST_F(S3TierTest, ABadS3SettingIsRefusedNamingTheField) {
  Options o = options("bad");
  o.s3 = "s3://Bad_Bucket/x";
  auto c = Checkpointer::open(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, "ValidationException");
  EXPECT_PRED2(contains, c.error().message, "s3 's3://Bad_Bucket/x'");
  o.s3 = "";
  o.dir = uri("bad");
  c = Checkpointer::open(o);
  ASSERT_FALSE(c);
  EXPECT_PRED2(contains, c.error().message, "dir: an s3:// prefix");
}

}  // namespace
}  // namespace endure::ckpt
