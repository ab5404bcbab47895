// A state the checkpointer holds (next_state(), save_in_place()): the caller writes each
// state into a slot handed out, and a save of it copies nothing; the slots take turns so
// that neither the state being read nor a disk write's source is ever handed out; the
// checksums taken while the state is written are those of its bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "endure/checkpoint.h"
#include "support/checkpoint_support.h"
#include "support/temp_dir.h"
#include "train/ckpt/format.h"
#include "train/ckpt/streaming_checksums.h"

namespace endure::ckpt {
namespace {

constexpr size_t kWeights = 5u << 20, kCounter = 8;  // the weights span checksum chunks

const std::vector<BufferShape> kShapes = {{"weights", kWeights}, {"counter", kCounter}};

// Writes step `step`'s state into the slot handed out.
void write_state(const std::vector<MutableBuffer>& slot, int64_t step) {
  auto w = pattern(step, kWeights);
  std::memcpy(slot[0].data, w.data(), w.size());
  std::memcpy(slot[1].data, &step, sizeof step);
}

void expect_state(const Loaded& loaded, int64_t step) {
  EXPECT_EQ(loaded.step, step);
  ASSERT_EQ(loaded.buffers.count("weights"), 1u);
  EXPECT_TRUE(loaded.buffers.at("weights") == pattern(step, kWeights)) << "step " << step;
  int64_t counter = -1;
  std::memcpy(&counter, loaded.buffers.at("counter").data(), sizeof counter);
  EXPECT_EQ(counter, step);
}

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Steps saved in place load back bit for bit from the disk; the slot handed out is never
// the one holding the state nor the one the last save to every tier is written from.
TEST(CheckpointInPlace, SavesCopyNothingAndLoadBitExact) {
  test::TempDir dir;
  auto c = open_ok({.dir = dir.path() / "shared", .keep_last = 0});
  void* reading = nullptr;
  std::set<void*> slots;
  for (int64_t step = 1; step <= 6; ++step) {
    auto slot = c->next_state(kShapes);
    ASSERT_TRUE(slot.ok()) << slot.error().message;
    ASSERT_EQ(slot->size(), 2u);
    EXPECT_NE(slot->at(0).data, reading) << "step " << step;
    reading = slot->at(0).data;
    slots.insert(reading);
    write_state(*slot, step);
    ASSERT_TRUE(c->save_in_place(step, {{"step", step}}).ok());
  }
  EXPECT_GE(slots.size(), 2u);
  EXPECT_LE(slots.size(), 3u);
  ASSERT_TRUE(c->wait().ok());
  for (int64_t step = 1; step <= 6; ++step) {
    auto loaded = c->load(step);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    expect_state(*loaded, step);
    EXPECT_EQ(loaded->user["step"], step);
  }
}

// The shard a save in place writes is byte for byte the one a save of the same buffers
// that copies them writes: one format, one set of checksums.
TEST(CheckpointInPlace, TheShardIsTheOneACopyingSaveWrites) {
  test::TempDir dir;
  auto in_place = open_ok({.dir = dir.path() / "a"});
  auto copying = open_ok({.dir = dir.path() / "b"});
  auto slot = in_place->next_state(kShapes);
  ASSERT_TRUE(slot.ok());
  write_state(*slot, 3);
  ASSERT_TRUE(in_place->save_in_place(3).ok());
  ASSERT_TRUE(copying
                  ->save(3, {{"weights", slot->at(0).data, kWeights},
                             {"counter", slot->at(1).data, kCounter}})
                  .ok());
  ASSERT_TRUE(in_place->wait().ok());
  ASSERT_TRUE(copying->wait().ok());
  for (const auto& name : {shard_name(0), descriptor_name(0)}) {
    EXPECT_EQ(file_bytes(step_dir(dir.path() / "a", 3) / name),
              file_bytes(step_dir(dir.path() / "b", 3) / name))
        << name;
  }
}

// With a memory tier every save commits in it at once (the slot is the shard); the slot
// handed out for the next state stops being a checkpoint before the caller writes it; a
// save to the memory tier alone reaches the disk at flush(); a restarted process restores
// the newest step from memory.
TEST(CheckpointInPlace, TheMemoryTierHoldsEachStepAndFlushWritesTheNewestToDisk) {
  test::TempDir dir;
  Options o{.dir = dir.path() / "shared", .keep_last = 0, .memory_dir = dir.path() / "shm"};
  {
    auto c = open_ok(o);
    auto slot = c->next_state(kShapes);
    ASSERT_TRUE(slot.ok());
    write_state(*slot, 1);
    ASSERT_TRUE(c->save_in_place(1).ok());
    for (int64_t step = 2; step <= 5; ++step) {
      slot = c->next_state(kShapes);
      ASSERT_TRUE(slot.ok());
      write_state(*slot, step);
      ASSERT_TRUE(c->save_in_place(step, {}, Tiers::memory).ok());
      auto newest = c->latest();
      ASSERT_TRUE(newest.has_value());
      EXPECT_EQ(newest->step, step);
      EXPECT_EQ(newest->tiers.front(), "memory");
    }
    ASSERT_TRUE(c->wait().ok());
    EXPECT_FALSE(std::filesystem::exists(step_dir(o.dir, 5) / kManifestName));
    // Handed out for step 6: the slot held no step the caller still needs, and what it held
    // is no checkpoint any more.
    std::set<int64_t> before;
    for (const auto& info : c->list()) before.insert(info.step);
    slot = c->next_state(kShapes);
    ASSERT_TRUE(slot.ok());
    std::set<int64_t> after;
    for (const auto& info : c->list()) after.insert(info.step);
    EXPECT_TRUE(after.count(5) && after.count(1));
    EXPECT_EQ(before.size(), after.size() + 1);
    write_state(*slot, 6);
    ASSERT_TRUE(c->flush().ok());
    EXPECT_TRUE(std::filesystem::exists(step_dir(o.dir, 5) / kManifestName));
  }
  auto again = open_ok(o);
  auto loaded = again->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  expect_state(*loaded, 5);
}

TEST(CheckpointInPlace, BadInputIsRefusedAndChangesNothing) {
  test::TempDir dir;
  auto c = open_ok({.dir = dir.path() / "shared"});
  auto refused = [](const Status& s, const std::string& says) {
    EXPECT_FALSE(s.ok());
    if (!s.ok()) {
      EXPECT_EQ(s.error().code, "ValidationException");
      EXPECT_NE(s.error().message.find(says), std::string::npos) << s.error().message;
    }
  };
  refused(c->save_in_place(1), "next_state() first");
  refused(Status(c->next_state({}).error()), "shapes");
  refused(Status(c->next_state({{"a", 4}, {"a", 4}}).error()), "given twice");
  refused(Status(c->next_state({{"", 4}}).error()), "name is empty");
  auto slot = c->next_state(kShapes);
  ASSERT_TRUE(slot.ok());
  write_state(*slot, 2);
  refused(c->save_in_place(2, {}, Tiers::memory), "memory tier");
  ASSERT_TRUE(c->save_in_place(2).ok());
  refused(c->save_in_place(3), "saved already");
  ASSERT_TRUE(c->next_state(kShapes).ok());
  refused(c->save_in_place(2), "step");
  std::vector<uint8_t> other(16);
  refused(c->save(9, {{"other", other.data(), other.size()}}), "save_in_place");
  ASSERT_TRUE(c->wait().ok());
  EXPECT_EQ(c->list().size(), 1u);

  auto copying = open_ok({.dir = dir.path() / "other"});
  ASSERT_TRUE(copying->save(1, {{"other", other.data(), other.size()}}).ok());
  refused(Status(copying->next_state(kShapes).error()), "of its own");
}

// Checksums taken as the state is written are those of the bytes, however the writers
// report them: in order by one thread, split between threads inside a chunk, out of order,
// or not at all.
TEST(StreamingChecksums, AreTheChunksChecksumsHoweverTheWritesAreReported) {
  const size_t chunk = 4096, size = 10 * chunk + 123, prefix = 16;
  const auto bytes = pattern(1, size);
  const auto want = chunk_checksums(bytes.data(), size, chunk);
  StreamingChecksums sums;
  auto report = [&](int thread, size_t begin, size_t end, size_t piece) {
    for (size_t at = begin; at < end; at += piece)
      sums.written(thread, bytes.data() + at, std::min(piece, end - at));
  };
  // One thread, in order, in pieces that do not divide a chunk.
  sums.reset(bytes.data(), size, chunk, prefix);
  report(0, prefix, size, 1000);
  EXPECT_EQ(sums.finish(2), want);
  // The same, each piece read from a copy of it (where a writer keeps it in cache).
  const auto copy = bytes;
  sums.reset(bytes.data(), size, chunk, prefix);
  for (size_t at = prefix; at < size; at += 1000) {
    sums.written(0, bytes.data() + at, std::min<size_t>(1000, size - at), copy.data() + at);
  }
  EXPECT_EQ(sums.finish(2), want);
  // Two threads meeting inside chunk 5, each in order.
  sums.reset(bytes.data(), size, chunk, prefix);
  report(1, 5 * chunk + 100, size, 777);
  report(0, prefix, 5 * chunk + 100, 777);
  EXPECT_EQ(sums.finish(1), want);
  // Three threads inside chunk 5, the last two ahead of the first, one meeting inside a
  // stripe and one at a line.
  sums.reset(bytes.data(), size, chunk, prefix);
  report(2, 5 * chunk + 960, size, 256);
  report(1, 5 * chunk + 100, 5 * chunk + 960, 256);
  report(0, prefix, 5 * chunk + 100, 256);
  EXPECT_EQ(sums.finish(2), want);
  // Out of order within chunks, some bytes reported twice, some never, and memory outside.
  sums.reset(bytes.data(), size, chunk, prefix);
  report(0, 3 * chunk, 4 * chunk, 512);
  report(0, 2 * chunk, 3 * chunk, 512);
  report(0, 2 * chunk, 3 * chunk, 512);
  report(1, 7 * chunk + 8, 9 * chunk, 512);
  uint8_t elsewhere[64] = {};
  sums.written(0, elsewhere, sizeof elsewhere);
  EXPECT_EQ(sums.finish(3), want);
}

}  // namespace
}  // namespace endure::ckpt
