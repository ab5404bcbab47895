#include "train/ckpt/promote.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/fs.h"
#include "common/log.h"
#include "common/mapped_file.h"
#include "train/ckpt/format.h"
#include "train/ckpt/s3_tier.h"
#include "train/ckpt/shard_io.h"
#include "train/ckpt/tiers.h"

namespace endure::ckpt {

namespace {

bool durable(const CheckpointInfo& info) {
  return std::any_of(info.tiers.begin(), info.tiers.end(),
                     [](const std::string& t) { return t == "shared" || t == "s3"; });
}

// This rank's shard and descriptor of info's step, from the node-local copy in `from` to
// the shared folder; rank 0 then commits the step there.
Status copy_step(const Options& o, const CheckpointInfo& info, const std::filesystem::path& from) {
  const auto descriptor_path = from / descriptor_name(o.rank);
  auto d = read_sealed(descriptor_path);
  if (!d) return d.error();
  if (d->value("step", -1LL) != info.step || !(*d)["chunks"].is_array()) {
    return make_error("CorruptCheckpoint", fmt::format("{}: not a descriptor of step {}",
                                                       descriptor_path.string(), info.step));
  }
  // Mapped, not read: a memory-tier copy goes out without a second copy in this process.
  const auto from_shard = from / shard_name(o.rank);
  auto shard = fs::MappedFile::open(from_shard);
  if (!shard) return make_error("CorruptCheckpoint", shard.error().message);
  const size_t size = (*shard)->size();
  if (size != d->value("size", 0ULL)) {
    return make_error("CorruptCheckpoint",
                      fmt::format("{}: not the {} bytes its descriptor says", from_shard.string(),
                                  d->value("size", 0ULL)));
  }

  const auto dir = step_dir(o.dir, info.step);
  const auto shard_path = dir / shard_name(o.rank);
  std::vector<std::string> sums;
  Status s = fs::make_dirs(dir);
  if (s)
    s = write_durable(shard_path, (*shard)->data(), size, d->value("chunk_bytes", 0ULL), &sums);
  if (s && json(sums) != (*d)["chunks"]) {
    std::error_code ec;
    std::filesystem::remove(shard_path, ec);
    std::filesystem::remove(dir, ec);  // fails, as it should, while other ranks' files are there
    return make_error("CorruptCheckpoint",
                      fmt::format("{}: fails its checksums", from_shard.string()));
  }
  // Sealed again, the same text it was read from.
  if (s) s = fs::atomic_write_file(dir / descriptor_name(o.rank), seal(*d).dump());
  if (s && o.rank == 0) s = commit_shared(o, dir, info.step, info.user);
  return s;
}

}  // namespace

Status copy_newest_to_shared(const Options& o, const std::vector<CheckpointInfo>& steps,
                             S3Tier* s3) {
  for (const CheckpointInfo& info : steps) {
    if (!info.valid) continue;
    if (durable(info)) return {};
    const auto local = std::find_if(info.tiers.begin(), info.tiers.end(), [](const std::string& t) {
      return t == "memory" || t == "local";
    });
    if (local == info.tiers.end()) continue;
    const std::string& tier = *local;
    Status s = copy_step(o, info, info.tier_paths[local - info.tiers.begin()]);
    if (!s && s.error().code == "CorruptCheckpoint") {
      log::warn("checkpoint step {}: its {} tier copy not written to the shared folder: {}",
                info.step, tier, s.error().message);
      continue;
    }
    if (!s) return s;
    log::info("checkpoint step {}: copied from the {} tier to the shared folder", info.step, tier);
    if (o.rank == 0) (void)prune(o.dir, o.keep_last, o.keep_every);  // as after any commit
    if (s3) s3->submit(info.step, info.user);
    return {};
  }
  return {};
}

}  // namespace endure::ckpt
