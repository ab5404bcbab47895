// Manifests that seal but lie, as another tool or a crafted file would write them: a field
// of another type, buffers larger than their shard. Each is refused with a reason; none
// throws or allocates what it names. The first is scripts/fuzz.sh's finding (its input is
// in fuzz/corpus/ckpt_manifest).
#include <gtest/gtest.h>

#include <fstream>

#include "endure/checkpoint.h"
#include "support/checkpoint_support.h"
#include "support/temp_dir.h"
#include "train/ckpt/format.h"

namespace endure::ckpt {
namespace {

// Step 1 in dir with a real 116-byte shard and `manifest` sealed as its MANIFEST.json.
std::filesystem::path step_with_manifest(const std::filesystem::path& dir, const json& manifest) {
  auto step = step_dir(dir, 1);
  std::filesystem::create_directories(step);
  std::ofstream(step / shard_name(0), std::ios::binary) << shard_header(0) + std::string(100, 'x');
  std::ofstream(step / kManifestName) << seal(manifest).dump();
  return step;
}

json manifest_with(const json& shard) {
  return {{"magic", "endure-ckpt"}, {"version", kFormatVersion}, {"step", 1}, {"world", 1},
          {"user", json::object()}, {"shards", json::array({shard})}};
}

const json kShard = {{"rank", 0},
                     {"file", "rank-00000.shard"},
                     {"size", 116},
                     {"chunk_bytes", 4096},
                     {"chunks", {"0000000000000000"}},
                     {"buffers", {{{"name", "w"}, {"offset", 16}, {"size", 100}}}}};

TEST(CheckpointHostile, AFieldOfAnotherTypeIsRefusedNotThrownOn) {
  test::TempDir dir;
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"step", json::array()}, {"world", "2"}, {"magic", 7}, {"shards", json::object()}}) {
    json m = manifest_with(kShard);
    m[key] = value;
    auto step = step_with_manifest(dir.path(), m);
    Status s;
    EXPECT_NO_THROW(s = verify_checkpoint(step)) << key;
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_EQ(s.error().code, "CorruptCheckpoint");
    EXPECT_NE(s.error().message.find(key), std::string::npos) << s.error().message;
    auto c = open_ok({.dir = dir.path()});
    EXPECT_NO_THROW((void)c->list()) << key;
    EXPECT_FALSE(c->latest().has_value()) << key;
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"size", -5}, {"chunks", {1, 2}}, {"buffers", "w"}, {"file", 3}}) {
    json shard = kShard;
    shard[key] = value;
    auto s = verify_checkpoint(step_with_manifest(dir.path(), manifest_with(shard)));
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_NE(s.error().message.find(key), std::string::npos) << s.error().message;
  }
}

TEST(CheckpointHostile, BuffersBeyondTheirShardAreRefusedBeforeAnyAllocation) {
  test::TempDir dir;
  for (uint64_t size : {uint64_t{1} << 50, uint64_t{101}, ~uint64_t{0}}) {
    json shard = kShard;
    shard["buffers"][0]["size"] = size;
    auto s = verify_checkpoint(step_with_manifest(dir.path(), manifest_with(shard)));
    ASSERT_FALSE(s.ok()) << size;
    EXPECT_NE(s.error().message.find("within the shard"), std::string::npos) << s.error().message;
    auto loaded = open_ok({.dir = dir.path()})->load(1);
    EXPECT_FALSE(loaded.ok()) << size;
  }
  json shard = kShard;
  shard["size"] = 10;  // shorter than a shard's header; the file says so too
  std::filesystem::resize_file(step_with_manifest(dir.path(), manifest_with(shard)) / shard_name(0), 10);
  EXPECT_FALSE(verify_checkpoint(step_dir(dir.path(), 1)).ok());
}

}  // namespace
}  // namespace endure::ckpt
