// A shard file as a restore reads it: its header and its buffers. The first byte sets the
// chunk size and whether the manifest's checksums are the file's own; the second where its
// bytes after the header split into two buffers; the rest is the file. The manifest that
// describes it is written here (a damaged shard, not a damaged manifest, is the case), then
// the step is verified and restored.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "endure/checkpoint.h"
#include "scratch_folder.h"
#include "train/ckpt/format.h"

namespace {

namespace ckpt = endure::ckpt;
using endure::json;

struct Tier {
  std::unique_ptr<ckpt::Checkpointer> checkpointer;
  std::filesystem::path step;
};

// A checkpointer whose shared folder holds step 1, made once per process.
const Tier& tier() {
  static const Tier t = [] {
    const auto& root = endure::fuzz::scratch_folder("shard");
    ckpt::Options o;
    o.dir = root;
    auto opened = ckpt::Checkpointer::open(o);
    if (!opened) std::abort();
    auto step = ckpt::step_dir(root, 1);
    std::filesystem::create_directories(step);
    return Tier{std::move(*opened), step};
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t chunk_bytes = 1 + (data[0] & 0x3f) * 37;
  const bool damaged = data[0] & 0x80;
  std::string file(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto& t = tier();
  std::ofstream(t.step / ckpt::shard_name(0), std::ios::binary | std::ios::trunc) << file;

  std::string summed = file;
  if (damaged && !summed.empty()) summed.back() ^= 1;
  json buffers = json::array();
  if (file.size() >= ckpt::kShardHeaderBytes) {
    const size_t n = file.size() - ckpt::kShardHeaderBytes;
    const size_t split = data[1] % (n + 1);
    buffers.push_back({{"name", "a"}, {"offset", ckpt::kShardHeaderBytes}, {"size", split}});
    buffers.push_back(
        {{"name", "b"}, {"offset", ckpt::kShardHeaderBytes + split}, {"size", n - split}});
  }
  json shard = {{"rank", 0},
                {"file", ckpt::shard_name(0)},
                {"size", file.size()},
                {"chunk_bytes", chunk_bytes},
                {"chunks", ckpt::chunk_checksums(reinterpret_cast<const uint8_t*>(summed.data()),
                                                 summed.size(), chunk_bytes)},
                {"buffers", buffers}};
  // As write_manifest() writes it, without its fsync: a run makes millions.
  json manifest = {
      {"magic", "endure-ckpt"}, {"version", ckpt::kFormatVersion}, {"step", 1}, {"world", 1},
      {"user", json::object()}, {"shards", json::array({shard})}};
  std::ofstream(t.step / ckpt::kManifestName, std::ios::trunc) << ckpt::seal(manifest).dump();
  (void)ckpt::verify_checkpoint(t.step);
  (void)t.checkpointer->load(1);
  return 0;
}
